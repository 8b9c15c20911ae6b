import type { z } from 'zod';
import type { outcomeView } from './views.js';
import type { CampaignAction, CampaignComponentKind, CampaignRow, CampaignStatus, ExposureGroupStats } from '../../store/campaigns.js';

/**
 * The campaign lifecycle, as pure rules (no I/O, no clock):
 *
 *   draft ──launch──▶ live ──pause──▶ paused ──launch──▶ live
 *   draft | live | paused ──close──▶ closed (terminal)
 *
 * Components can be added, removed or changed only while nothing of the campaign is live (draft or
 * paused), so that what a launch applied is exactly what pause and close undo.
 */
export const COMPONENT_KINDS = ['segment', 'variant', 'placement', 'experiment', 'trigger'] as const satisfies readonly CampaignComponentKind[];

/** The most components one campaign holds. */
export const MAX_COMPONENTS = 100;

export const STEP_OUTCOMES = ['succeeded', 'skipped', 'failed'] as const;
export type StepOutcomeKind = (typeof STEP_OUTCOMES)[number];

/** What one step did to one component. `reason` is built from ids and states only, never from visitor data. */
export interface StepResult {
  outcome: StepOutcomeKind;
  /** snake_case machine code of a failure (null unless failed). */
  error_code: string | null;
  reason: string;
}

/** A step's outcome as recorded on the run and returned by the tools. */
export interface StepRecord extends StepResult {
  component_id: string;
  kind: CampaignComponentKind;
  ref_id: string;
  required: boolean;
  step: string;
}

export function succeeded(reason: string): StepResult {
  return { outcome: 'succeeded', error_code: null, reason };
}
export function skipped(reason: string): StepResult {
  return { outcome: 'skipped', error_code: null, reason };
}
export function failed(code: string, reason: string): StepResult {
  return { outcome: 'failed', error_code: code, reason };
}

/**
 * Launch runs the steps so that what a component depends on goes first: segments (targeting), variants
 * (content), placements (which serve published variants), tests (whose arms are variants), triggers (which
 * may fire on the segments). Pause and close undo in the reverse order.
 */
const LAUNCH_ORDER: readonly CampaignComponentKind[] = ['segment', 'variant', 'placement', 'experiment', 'trigger'];

export function stepOrder<T extends { kind: CampaignComponentKind }>(action: CampaignAction, components: readonly T[]): T[] {
  const order = action === 'launch' ? LAUNCH_ORDER : [...LAUNCH_ORDER].reverse();
  // Array.prototype.sort is stable: within a kind, components keep the order they were added in.
  return [...components].sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
}

/** The refusal of an action in a status, or null when allowed. */
export function refusal(action: CampaignAction | 'edit', status: CampaignStatus): string | null {
  switch (action) {
    case 'launch':
      return status === 'draft' || status === 'paused' ? null : status === 'live' ? 'the campaign is already live' : 'a closed campaign cannot be launched again';
    case 'pause':
      return status === 'live' ? null : `only a live campaign can be paused; this one is ${status}`;
    case 'close':
      return status === 'closed' ? 'the campaign is already closed' : null;
    case 'edit':
      return status === 'draft' || status === 'paused'
        ? null
        : status === 'live'
          ? 'components of a live campaign cannot change; pause it first'
          : 'a closed campaign cannot change';
  }
}

/**
 * Whether a launch stays applied: it is rolled back as a whole when any required component's step failed.
 * A failed optional step is recorded and the launch goes on.
 */
export function launchApplies(steps: readonly Pick<StepRecord, 'outcome' | 'required'>[]): boolean {
  return !steps.some((s) => s.required && s.outcome === 'failed');
}

type Lifecycle = Pick<CampaignRow, 'status' | 'first_launched_at' | 'live_since' | 'live_ms' | 'paused_at' | 'closed_at' | 'closed_by' | 'outcome'>;

function current(c: CampaignRow): Lifecycle {
  return {
    status: c.status,
    first_launched_at: c.first_launched_at,
    live_since: c.live_since,
    live_ms: c.live_ms,
    paused_at: c.paused_at,
    closed_at: c.closed_at,
    closed_by: c.closed_by,
    outcome: c.outcome,
  };
}

/** Milliseconds the campaign has been live up to `now`: finished live periods plus the current one. */
export function liveMs(c: Pick<CampaignRow, 'live_ms' | 'live_since'>, now: number): number {
  return Number(c.live_ms) + (c.live_since === null ? 0 : Math.max(0, now - Number(c.live_since)));
}

export function afterLaunch(c: CampaignRow, now: number): Lifecycle {
  return { ...current(c), status: 'live', first_launched_at: c.first_launched_at ?? now, live_since: now, paused_at: null };
}

export function afterPause(c: CampaignRow, now: number): Lifecycle {
  return { ...current(c), status: 'paused', live_ms: liveMs(c, now), live_since: null, paused_at: now };
}

export function afterClose(c: CampaignRow, now: number, actor: string, outcome: CampaignOutcome): Lifecycle {
  return { ...current(c), status: 'closed', live_ms: liveMs(c, now), live_since: null, closed_at: now, closed_by: actor, outcome: JSON.stringify(outcome) };
}

/**
 * The outcome snapshot at close (the `outcome` of campaign.closed): the outcome
 * view, whose visitor counts are null only in snapshots stored before they
 * were recorded, so a new snapshot always has them.
 */
export type CampaignOutcome = Omit<z.infer<typeof outcomeView>, 'exposed_visitors' | 'holdout_visitors'> & { exposed_visitors: number; holdout_visitors: number };

const DAY_MS = 86_400_000;

/**
 * The snapshot from the exposure statistics (see CampaignsRepo.exposureStats):
 * - days_live: whole days the campaign was live (paused periods do not count), rounded down;
 * - exposed_visitors, holdout_visitors: distinct visitors with an exposure in the window, treated and holdout;
 * - sessions, profiles, conversions, revenue (in the site currency; conversions in another currency count
 *   as conversions but add no revenue), leads: of the profiles of the visitors exposed to the campaign's
 *   variants, placements and tests, from each profile's first exposure to the close;
 * - conversion_rate: conversions / sessions, capped at 1 (0 without sessions);
 * - lift: (rate_exposed − rate_holdout) / rate_holdout with rate = converting profiles / profiles, the
 *   holdout being the site's holdout visitors seen on the same zones; null when unmeasured (no exposed
 *   or no holdout profiles, or a holdout rate of 0).
 */
export function buildOutcome(treated: ExposureGroupStats, holdout: ExposureGroupStats, liveMillis: number, currency: string): CampaignOutcome {
  const rate = treated.sessions > 0 ? Math.min(1, treated.conversions / treated.sessions) : 0;
  const rT = treated.profiles > 0 ? treated.converters / treated.profiles : null;
  const rH = holdout.profiles > 0 ? holdout.converters / holdout.profiles : null;
  const lift = rT === null || rH === null || rH === 0 ? null : (rT - rH) / rH;
  return {
    days_live: Math.floor(Math.max(0, liveMillis) / DAY_MS),
    exposed_visitors: treated.visitors,
    holdout_visitors: holdout.visitors,
    sessions: treated.sessions,
    profiles: treated.profiles,
    conversions: treated.conversions,
    conversion_rate: round(rate, 6),
    revenue: round(Math.max(0, treated.revenue), 2),
    currency,
    leads: treated.leads,
    lift: lift === null ? null : round(lift, 6),
  };
}

function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}
