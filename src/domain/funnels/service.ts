import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { FunnelRow } from '../../store/stall.js';
import type { SegmentRow } from '../../store/segments.js';
import { normalizeSteps, type FunnelStep, type StepInput } from './schema.js';
import { scanFunnels } from './scan.js';
import { iso } from '../time.js';
import { funnelView, type FunnelReportView, type FunnelView } from './views.js';

/** Highest session score at or above which a session belongs to the high-intent cohort (scores on a 0..100 scale). */
export const HIGH_INTENT_SCORE = 70;
export const HIGH_INTENT_KEY = 'high_intent';
export const HIGH_INTENT_LABEL = 'High-intent visitors';

export interface Funnel {
  id: string;
  siteId: string;
  name: string;
  steps: FunnelStep[];
  createdAt: number;
  updatedAt: number;
}

export function funnelOf(row: FunnelRow): Funnel {
  return { id: row.id, siteId: row.site_id, name: row.name, steps: JSON.parse(row.steps) as FunnelStep[], createdAt: row.created_at, updatedAt: row.updated_at };
}

function checkedSteps(steps: readonly StepInput[]): FunnelStep[] {
  const r = normalizeSteps(steps);
  if (!r.ok) throw new AppError('validation_failed', r.message, { field: `steps[${r.index}].key` });
  return r.steps;
}

export async function requireFunnel(store: Repos, siteId: string, id: string): Promise<Funnel> {
  const row = await store.stall.funnel(siteId, id);
  if (!row) throw new AppError('not_found', `no funnel ${JSON.stringify(id)} in this site`, { field: 'id' });
  return funnelOf(row);
}

/** Every funnel of the site, by name. */
export async function listFunnels(store: Store, siteId: string): Promise<FunnelView[]> {
  return (await store.stall.funnels(siteId)).map((r) => funnelView(funnelOf(r)));
}

export async function getFunnel(store: Store, siteId: string, id: string): Promise<FunnelView> {
  return funnelView(await requireFunnel(store, siteId, id));
}

/** Creates a funnel; a name already used in the site is a conflict. */
export async function createFunnel(store: Store, siteId: string, input: { name: string; steps: readonly StepInput[] }): Promise<FunnelView> {
  const f = await store.write(async (tx) => {
    const steps = checkedSteps(input.steps);
    const id = newId('fnl');
    const now = Date.now();
    if (!(await tx.stall.createFunnel({ id, siteId, name: input.name, steps: JSON.stringify(steps), now }))) {
      throw new AppError('conflict', `a funnel named ${JSON.stringify(input.name)} already exists`, { field: 'name' });
    }
    return funnelOf((await tx.stall.funnel(siteId, id))!);
  });
  return funnelView(f);
}

/** Renames a funnel or replaces its steps (at least one of them); a name already used in the site is a conflict. */
export async function updateFunnel(store: Store, siteId: string, id: string, patch: { name?: string | undefined; steps?: readonly StepInput[] | undefined }): Promise<FunnelView> {
  if (patch.name === undefined && patch.steps === undefined) throw new AppError('validation_failed', 'give name or steps (or both) to change', { field: 'name' });
  const updated = await store.write(async (tx) => {
    const f = await requireFunnel(tx, siteId, id);
    const name = patch.name ?? f.name;
    if (name !== f.name && (await tx.stall.funnelByName(siteId, name)) !== undefined) {
      throw new AppError('conflict', `a funnel named ${JSON.stringify(name)} already exists`, { field: 'name' });
    }
    const steps = patch.steps !== undefined ? checkedSteps(patch.steps) : f.steps;
    await tx.stall.updateFunnel(siteId, id, { name, steps: JSON.stringify(steps), now: Date.now() });
    return funnelOf((await tx.stall.funnel(siteId, id))!);
  });
  return funnelView(updated);
}

/** Deletes a funnel (not_found when there is none); findings filed for it stay. */
export async function deleteFunnel(store: Store, siteId: string, id: string): Promise<{ removed: string }> {
  await store.write(async (tx) => {
    if (!(await tx.stall.deleteFunnel(siteId, id))) throw new AppError('not_found', `no funnel ${JSON.stringify(id)} in this site`, { field: 'id' });
  });
  return { removed: id };
}

/** A cohort named by key: high_intent, or segment:<segment id>. */
export interface CohortRef {
  key: string;
  label: string;
  segmentId: string | null;
}

export function resolveCohort(key: string, segments: readonly SegmentRow[]): CohortRef {
  if (key === HIGH_INTENT_KEY) return { key, label: HIGH_INTENT_LABEL, segmentId: null };
  if (key.startsWith('segment:')) {
    const seg = segments.find((s) => s.id === key.slice('segment:'.length));
    if (seg) return { key, label: seg.name.slice(0, 200), segmentId: seg.id };
  }
  throw new AppError('validation_failed', `cohort: ${JSON.stringify(key)} is neither high_intent nor segment:<id of a segment of this site>`, { field: 'cohort' });
}

export interface FunnelReportStep {
  position: number;
  key: string;
  label: string;
  sessions: number;
  overall_rate: number | null;
  step_rate: number | null;
}

/**
 * The funnel over sessions that started in [from, to): per step, sessions that did
 * steps 1..k in order within the session, the overall rate (k / step 1) and the
 * step-to-step rate (k / k−1); null rates when the denominator is 0.
 */
export async function funnelReport(store: Repos, f: Funnel, from: number, to: number, cohort: CohortRef | null): Promise<{ steps: FunnelReportStep[]; sessions_scanned: number }> {
  const KEY = 'x';
  const scan = await scanFunnels(store, {
    siteId: f.siteId,
    funnels: [f],
    bounds: [from, to],
    needsSegments: cohort?.segmentId != null,
    cohortsOf: (s) => {
      if (cohort === null) return [KEY];
      if (cohort.segmentId === null) return s.maxScore !== null && s.maxScore >= HIGH_INTENT_SCORE ? [KEY] : [];
      return s.segments.includes(cohort.segmentId) ? [KEY] : [];
    },
  });
  const c = scan.counts.get(f.id)!.get(KEY);
  const reached = (i: number) => (c === undefined ? 0 : c.reached[i]!);
  const first = reached(0);
  const steps = f.steps.map((s, i) => ({
    position: i + 1,
    key: s.key,
    label: s.label,
    sessions: reached(i),
    overall_rate: first === 0 ? null : reached(i) / first,
    step_rate: i === 0 ? (first === 0 ? null : 1) : reached(i - 1) === 0 ? null : reached(i) / reached(i - 1),
  }));
  return { steps, sessions_scanned: scan.sessions };
}

const DAY = 86_400_000;

/**
 * The report of funnel `funnelId` over sessions that started in [from, to)
 * (default the 28 days before `to`, which defaults to now; at most 366
 * days), optionally only for a cohort (high_intent or segment:<id>).
 */
export async function reportFunnel(
  store: Store,
  siteId: string,
  q: { funnelId: string; from?: number | undefined; to?: number | undefined; cohort?: string | undefined },
): Promise<FunnelReportView> {
  const f = await requireFunnel(store, siteId, q.funnelId);
  const to = q.to ?? Date.now();
  const from = q.from ?? to - 28 * DAY;
  if (!(from < to)) throw new AppError('validation_failed', 'from must be before to', { field: 'from' });
  if (to - from > 366 * DAY) throw new AppError('validation_failed', 'the window is at most 366 days', { field: 'from' });
  const cohort = q.cohort === undefined ? null : resolveCohort(q.cohort, await store.segments.list(siteId));
  const r = await funnelReport(store, f, from, to, cohort);
  return { funnel_id: f.id, from: iso(from)!, to: iso(to)!, cohort: cohort?.key ?? null, sessions_scanned: r.sessions_scanned, steps: r.steps };
}
