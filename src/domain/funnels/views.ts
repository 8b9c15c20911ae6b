import { z } from 'zod';
import { iso } from '../time.js';
import { funnelStepView, stepView } from './schema.js';
import type { Funnel } from './service.js';

/** A funnel as tools show it. */
export const funnelViewSchema = z.object({
  id: z.string().describe('Funnel id (fnl_...).'),
  name: z.string().describe('Name, unique in the site.'),
  steps: z.array(funnelStepView).describe('The ordered steps.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
});
export type FunnelView = z.input<typeof funnelViewSchema>;

export const funnelView = (f: Funnel): FunnelView => ({
  id: f.id,
  name: f.name,
  steps: f.steps.map(stepView),
  created_at: iso(f.createdAt)!,
  updated_at: iso(f.updatedAt)!,
});

/** A funnel report over a window, optionally for one cohort. */
export const funnelReportSchema = z.object({
  funnel_id: z.string().describe('The funnel.'),
  from: z.string().describe('Window start, ISO 8601.'),
  to: z.string().describe('Window end (exclusive), ISO 8601.'),
  cohort: z.string().nullable().describe('The cohort key; null for all sessions.'),
  sessions_scanned: z.number().int().describe('Sessions of the site that started in the window.'),
  steps: z
    .array(
      z.object({
        position: z.number().int().describe('1-based position.'),
        key: z.string().describe('Machine name of the step.'),
        label: z.string().describe('Display label.'),
        sessions: z.number().int().describe('Sessions that did steps 1..k in order.'),
        overall_rate: z.number().nullable().describe('sessions / sessions of step 1; null when step 1 has none.'),
        step_rate: z.number().nullable().describe('sessions / sessions of step k-1 (1 for step 1); null when the previous step has none.'),
      }),
    )
    .describe('Per step, in order.'),
});
export type FunnelReportView = z.input<typeof funnelReportSchema>;
