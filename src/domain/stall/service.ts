import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import { iso } from '../time.js';
import { runStallPass } from './pass.js';
import { findingView, type FindingView, type StallRunView } from './views.js';

/**
 * Runs the stall pass now for the ISO week containing `asOf` (default now; a
 * time more than a day ahead is refused) and shows what it filed.
 */
export async function runStall(store: Store, siteId: string, opts: { asOf?: number | undefined; baselineWeeks: number; highIntentScore: number }): Promise<StallRunView> {
  const asOf = opts.asOf ?? Date.now();
  if (asOf > Date.now() + 86_400_000) throw new AppError('validation_failed', 'as_of is in the future', { field: 'as_of' });
  const r = await runStallPass(store, siteId, { asOf, baselineWeeks: opts.baselineWeeks, highIntentScore: opts.highIntentScore });
  return {
    iso_week: r.isoWeek.label,
    week_start: iso(r.isoWeek.start)!,
    week_end: iso(r.isoWeek.end)!,
    baseline_weeks: r.baselineWeeks,
    sessions_scanned: r.sessionsScanned,
    tested: r.tested,
    significant: r.significant.length,
    filed: r.filed.map(findingView),
  };
}

/** Findings of the stall pass, newest first, optionally of one ISO week or funnel. */
export async function listFindings(store: Store, siteId: string, f: { isoWeek?: string | undefined; funnelId?: string | undefined; limit: number }): Promise<FindingView[]> {
  return (await store.stall.findings(siteId, f)).map(findingView);
}
