import { z } from 'zod';
import type { SegmentRow } from '../../store/segments.js';

/** The view of a segment: its rule, priority, status and member count. */
export const segmentView = z.object({
  id: z.string(),
  name: z.string(),
  priority: z.number().int(),
  rule: z.unknown(),
  status: z.enum(['draft', 'live']).describe('draft: proposed under propose-only and awaiting approval (no members, evaluated nowhere); live: evaluated.'),
  members: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type SegmentView = z.input<typeof segmentView>;

/** The view of a segment across sites (svc segment --json): the segment view with its site after the id. */
export type SiteSegmentView = { id: string; site_id: string } & Omit<SegmentView, 'id'>;

export function segmentOut(row: SegmentRow, members: number): SegmentView {
  return {
    id: row.id,
    name: row.name,
    priority: row.priority,
    rule: JSON.parse(row.rule) as unknown,
    status: row.status,
    members,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

export function siteSegmentOut(row: SegmentRow, members: number): SiteSegmentView {
  const { id, ...rest } = segmentOut(row, members);
  return { id, site_id: row.site_id, ...rest };
}
