/**
 * Layout tests over the store: creating and changing them, their lifecycle,
 * results, ending and shipping (with their webhook events, in the same
 * transaction), the visitor's arm, and the Core Web Vitals guardrail.
 *
 * Every function that writes takes the `tx` of one write operation and does
 * every read through it; read-only functions take any `Repos`.
 */
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { Repos } from '../../store/repos.js';
import type { ArmRow, ExperimentRow, NewArm } from '../../store/experiments.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { assignArm, bucket, inHoldout } from './assign.js';
import {
  computeResults,
  EARLY_STOP_MIN_RUN_MS,
  earlyStop,
  editableFields,
  GUARDRAIL_ABSOLUTE_MARGIN,
  GUARDRAIL_MIN_SAMPLE,
  GUARDRAIL_RELATIVE_MARGIN,
  guardrailVerdict,
  POOR,
  transition,
  VITAL_LIMITS,
  VITALS,
  type ArmInfo,
  type EarlyStop,
  type EndReason,
  type GuardrailVerdict,
  type PrimaryMetric,
  type Results,
  type Vital,
} from './rules.js';

export interface ArmInput {
  label: string;
  control: boolean;
  variant_id?: string | undefined;
  weight: number;
}

export interface CreateInput {
  name: string;
  zone_id?: string | undefined;
  page_id?: string | undefined;
  arms: ArmInput[];
  primary_metric: PrimaryMetric;
  metric_event?: string | undefined;
  guardrail_metrics: Vital[];
  scheduled_end_at?: number | undefined;
  stop_early: boolean;
  seed?: string | undefined;
}

export interface UpdateInput {
  name?: string | undefined;
  arms?: ArmInput[] | undefined;
  weights?: { arm_id: string; weight: number }[] | undefined;
  primary_metric?: PrimaryMetric | undefined;
  metric_event?: string | null | undefined;
  guardrail_metrics?: Vital[] | undefined;
  scheduled_end_at?: number | null | undefined;
  stop_early?: boolean | undefined;
  seed?: string | undefined;
}

const invalid = (field: string, message: string) => new AppError('validation_failed', `${field}: ${message}`, { field });

export async function requireExperiment(r: Repos, siteId: string, id: string): Promise<ExperimentRow> {
  const row = await r.experiments.get(siteId, id);
  if (!row) throw new AppError('not_found', `no layout test ${JSON.stringify(id)} in this site`, { field: 'id' });
  return row;
}

export function armInfo(a: ArmRow): ArmInfo {
  return { id: a.id, label: a.label, isControl: a.is_control === 1, variantId: a.variant_id, weight: a.weight };
}

export function guardrailsOf(row: ExperimentRow): Vital[] {
  const parsed = JSON.parse(row.guardrail_metrics) as unknown;
  return Array.isArray(parsed) ? (parsed.filter((m) => (VITALS as readonly unknown[]).includes(m)) as Vital[]) : [];
}

/** Checks the target and the arms against the site's zones and variants; returns the page the test runs on. */
async function checkTarget(tx: Repos, siteId: string, zoneId: string | null, pageId: string | null, arms: readonly ArmInput[]): Promise<void> {
  if ((zoneId === null) === (pageId === null)) throw invalid('zone_id', 'give exactly one of zone_id (a zone test) or page_id (a page test)');
  let page: string;
  if (zoneId !== null) {
    const zone = await tx.experiments.zone(siteId, zoneId);
    if (!zone) throw new AppError('not_found', `no zone ${JSON.stringify(zoneId)} in this site`, { field: 'zone_id' });
    page = zone.page_id;
  } else {
    if (!(await tx.experiments.page(siteId, pageId!))) throw new AppError('not_found', `no page ${JSON.stringify(pageId)} in this site`, { field: 'page_id' });
    page = pageId!;
  }
  if (arms.filter((a) => a.control).length !== 1) throw invalid('arms', 'exactly one arm is the control');
  if (arms.length < 2) throw invalid('arms', 'a test needs the control and at least one variant arm');
  const labels = new Set<string>();
  const variants = new Set<string>();
  for (const [i, a] of arms.entries()) {
    if (labels.has(a.label)) throw invalid(`arms.${i}.label`, 'arm labels are unique within a test');
    labels.add(a.label);
    if (a.control) {
      if (a.variant_id !== undefined) throw invalid(`arms.${i}.variant_id`, "the control shows the zone's default content and has no variant");
      continue;
    }
    if (a.variant_id === undefined) throw invalid(`arms.${i}.variant_id`, 'a variant arm names the variant it shows');
    if (variants.has(a.variant_id)) throw invalid(`arms.${i}.variant_id`, 'each variant appears in one arm');
    variants.add(a.variant_id);
    const v = await tx.experiments.variant(siteId, a.variant_id);
    if (!v) throw new AppError('not_found', `no variant ${JSON.stringify(a.variant_id)} in this site`, { field: `arms.${i}.variant_id` });
    if (zoneId !== null ? v.zone_id !== zoneId : v.page_id !== page) {
      throw invalid(`arms.${i}.variant_id`, zoneId !== null ? 'the variant belongs to another zone' : 'the variant belongs to a zone of another page');
    }
    if (v.status === 'disabled' || v.status === 'archived') throw invalid(`arms.${i}.variant_id`, `the variant is ${v.status}`);
  }
  if (arms.reduce((s, a) => s + a.weight, 0) <= 0) throw invalid('arms', 'the weights add up to more than 0');
}

function checkMetric(metric: PrimaryMetric, event: string | null): void {
  if (metric === 'custom_event' && event === null) throw invalid('metric_event', 'a custom_event metric names its event type');
  if (metric !== 'custom_event' && event !== null) throw invalid('metric_event', 'only a custom_event metric has an event type');
}

function checkEnd(at: number | null, now: number): void {
  if (at !== null && at <= now) throw invalid('scheduled_end', 'the scheduled end is in the future');
}

const newArms = (arms: readonly ArmInput[]): NewArm[] =>
  // The control first: it is the reference of every comparison and the first range of the hash space.
  [...arms]
    .sort((a, b) => Number(b.control) - Number(a.control))
    .map((a) => ({ id: newId('arm'), label: a.label, isControl: a.control, variantId: a.variant_id ?? null, weight: a.weight }));

export async function createExperiment(tx: Repos, siteId: string, actor: string, input: CreateInput, now: number): Promise<ExperimentRow> {
  const zoneId = input.zone_id ?? null;
  const pageId = input.page_id ?? null;
  await checkTarget(tx, siteId, zoneId, pageId, input.arms);
  checkMetric(input.primary_metric, input.metric_event ?? null);
  checkEnd(input.scheduled_end_at ?? null, now);
  const id = newId('exp');
  await tx.experiments.insert(
    {
      id,
      siteId,
      name: input.name,
      pageId,
      zoneId,
      seed: input.seed ?? id,
      primaryMetric: input.primary_metric,
      metricEvent: input.metric_event ?? null,
      guardrailMetrics: JSON.stringify([...new Set(input.guardrail_metrics)]),
      stopEarly: input.stop_early,
      scheduledEndAt: input.scheduled_end_at ?? null,
      createdBy: actor,
      now,
    },
    newArms(input.arms),
  );
  return (await tx.experiments.get(siteId, id))!;
}

/**
 * Changes a test. In draft everything may change. While running or paused only the scheduled
 * end, stop_early and the arms' weights: a visitor keeps the arm of its first exposure (the
 * decision reads it before hashing), so new weights steer only visitors not yet exposed.
 * Ended and shipped tests are final.
 */
export async function updateExperiment(tx: Repos, siteId: string, id: string, input: UpdateInput, now: number): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  const mode = editableFields(row.status);
  if (mode === 'none') throw new AppError('conflict', `a ${row.status} test cannot change`, { status: row.status });
  if (mode === 'live') {
    const draftOnly = (['name', 'arms', 'primary_metric', 'metric_event', 'guardrail_metrics', 'seed'] as const).filter((k) => input[k] !== undefined);
    if (draftOnly.length > 0) {
      throw new AppError('conflict', `a ${row.status} test changes only scheduled_end, stop_early and weights (not ${draftOnly.join(', ')})`, {
        status: row.status,
        fields: draftOnly,
      });
    }
  }
  if (input.arms !== undefined && input.weights !== undefined) throw invalid('weights', 'give arms or weights, not both');
  const metric = input.primary_metric ?? row.primary_metric;
  const event = input.metric_event !== undefined ? input.metric_event : input.primary_metric !== undefined && input.primary_metric !== 'custom_event' ? null : row.metric_event;
  checkMetric(metric, event);
  const scheduledEnd = input.scheduled_end_at !== undefined ? input.scheduled_end_at : row.scheduled_end_at;
  if (input.scheduled_end_at !== undefined) checkEnd(input.scheduled_end_at, now);
  if (input.arms !== undefined) {
    await checkTarget(tx, siteId, row.zone_id, row.page_id, input.arms);
    await tx.experiments.replaceArms(siteId, id, newArms(input.arms));
  }
  if (input.weights !== undefined) {
    const arms = await tx.experiments.arms(siteId, id);
    const next = new Map(arms.map((a) => [a.id, a.weight]));
    for (const [i, w] of input.weights.entries()) {
      if (!next.has(w.arm_id)) throw new AppError('not_found', `no arm ${JSON.stringify(w.arm_id)} in this test`, { field: `weights.${i}.arm_id` });
      next.set(w.arm_id, w.weight);
    }
    if ([...next.values()].reduce((s, w) => s + w, 0) <= 0) throw invalid('weights', 'the weights add up to more than 0');
    for (const w of input.weights) await tx.experiments.setWeight(w.arm_id, w.weight);
  }
  await tx.experiments.update(id, {
    name: input.name ?? row.name,
    primaryMetric: metric,
    metricEvent: event,
    guardrailMetrics: input.guardrail_metrics !== undefined ? JSON.stringify([...new Set(input.guardrail_metrics)]) : row.guardrail_metrics,
    stopEarly: input.stop_early ?? row.stop_early === 1,
    scheduledEndAt: scheduledEnd,
    seed: input.seed ?? row.seed,
    now,
  });
  return (await tx.experiments.get(siteId, id))!;
}

function refuse(row: ExperimentRow, action: string): AppError {
  return new AppError('conflict', `cannot ${action} a ${row.status} test`, { status: row.status, action });
}

export async function startExperiment(tx: Repos, siteId: string, id: string, now: number): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'start') === null) throw refuse(row, 'start');
  if (row.scheduled_end_at !== null && row.scheduled_end_at <= now) throw new AppError('conflict', 'the scheduled end has passed; move it first', { field: 'scheduled_end' });
  const arms = await tx.experiments.arms(siteId, id);
  for (const a of arms) {
    if (a.variant_id === null) continue;
    const v = await tx.experiments.variant(siteId, a.variant_id);
    // A running test shows its variants to visitors: only approved or published content, so that
    // starting a test never bypasses the approval a propose-only token cannot give.
    if (!v || (v.status !== 'approved' && v.status !== 'published')) {
      throw new AppError('conflict', `the variant of arm ${a.label} is ${v?.status ?? 'gone'}; only approved or published variants are tested`, {
        arm_id: a.id,
      });
    }
  }
  const page = row.zone_id !== null ? (await tx.experiments.zone(siteId, row.zone_id))!.page_id : row.page_id!;
  const clash = await tx.experiments.overlapping(siteId, id, row.zone_id, page);
  if (clash.length > 0) {
    throw new AppError('conflict', `another live test shows content in the same zones: ${clash.map((c) => c.id).join(', ')}`, { experiments: clash.map((c) => c.id) });
  }
  await tx.experiments.start(id, now);
  return (await tx.experiments.get(siteId, id))!;
}

export async function pauseExperiment(tx: Repos, siteId: string, id: string, actor: string, now: number): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'pause') === null) throw refuse(row, 'pause');
  await tx.experiments.pause(id, `manual:${actor}`, now);
  return (await tx.experiments.get(siteId, id))!;
}

/** Resumes a paused test. After a guardrail pause the guardrail judges only vitals received from now on. */
export async function resumeExperiment(tx: Repos, siteId: string, id: string, now: number): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'resume') === null) throw refuse(row, 'resume');
  if (row.scheduled_end_at !== null && row.scheduled_end_at <= now) throw new AppError('conflict', 'the scheduled end has passed; end the test or move the end', {});
  await tx.experiments.resume(id, row.pause_reason?.startsWith('guardrail:') === true ? now : row.guardrail_since, now);
  return (await tx.experiments.get(siteId, id))!;
}

/** Per-arm results of a test, counted until it ended (or now). */
export async function resultsOf(r: Repos, row: ExperimentRow, now: number): Promise<Results> {
  const arms = (await r.experiments.arms(row.site_id, row.id)).map(armInfo);
  const aggregates = await r.experiments.aggregates(row.site_id, row.id, row.metric_event, row.ended_at ?? now + 1);
  return computeResults(row.primary_metric, arms, aggregates);
}

/**
 * Ends a running or paused test and emits experiment.ended with the per-arm results.
 * `winner` overrides the results' winner (early stopping decides at its stricter level).
 * `precomputed` results (counted until the same `now`, read before the transaction) keep the
 * aggregation out of the write transaction, so a large test never holds up other writes.
 */
export async function endExperiment(
  tx: Repos,
  siteId: string,
  id: string,
  reason: EndReason,
  actor: string,
  now: number,
  winner?: string | null,
  precomputed?: Results,
): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'end') === null) throw refuse(row, 'end');
  const results = precomputed ?? (await resultsOf(tx, row, now));
  const winning = winner !== undefined ? winner : results.winning_arm_id;
  await tx.experiments.end(id, reason, winning, actor, now);
  const site = await tx.sites.get(siteId);
  const payload = CATALOGUE['experiment.ended'].schema.parse({
    event: 'experiment.ended',
    site_id: siteId,
    experiment_id: id,
    reason,
    started_at: new Date(row.started_at ?? now).toISOString(),
    winning_arm_id: winning,
    currency: site?.currency ?? 'USD',
    arms: results.arms.map((a) => ({
      arm_id: a.arm_id,
      label: a.label,
      control: a.control,
      sessions: a.visitors,
      conversions: a.converters,
      conversion_rate: a.conversion_rate,
      revenue: a.revenue,
      lift: a.comparison?.relative_lift ?? null,
      probability_to_beat_control: a.comparison?.chance_to_beat_control ?? null,
    })),
    timestamp: new Date(now).toISOString(),
  });
  await tx.activity.enqueue(siteId, 'experiment.ended', payload, now);
  return (await tx.experiments.get(siteId, id))!;
}

/**
 * Ships an ended test: the given arm, or the winner the end recorded. The arm's variant is
 * published; the decision shows the shipped arm to everyone (the control: the zone default).
 */
export async function shipExperiment(
  tx: Repos,
  siteId: string,
  id: string,
  armId: string | undefined,
  actor: string,
  now: number,
  precomputed?: Results,
): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'ship') === null) throw refuse(row, 'ship');
  const chosen = armId ?? row.winning_arm_id;
  if (chosen === null) throw new AppError('conflict', 'the test ended without a winner; name the arm to ship', { field: 'arm_id' });
  const arms = await tx.experiments.arms(siteId, id);
  const arm = arms.find((a) => a.id === chosen);
  if (!arm) throw new AppError('not_found', `no arm ${JSON.stringify(chosen)} in this test`, { field: 'arm_id' });
  if (arm.variant_id !== null) {
    const v = await tx.experiments.variant(siteId, arm.variant_id);
    if (!v || v.status === 'disabled' || v.status === 'archived') throw new AppError('conflict', `the arm's variant is ${v?.status ?? 'gone'}`, { arm_id: arm.id });
    await tx.experiments.publishVariant(arm.variant_id, actor, now);
  }
  const results = precomputed ?? (await resultsOf(tx, row, now));
  await tx.experiments.ship(id, arm.id, actor, now);
  const payload = CATALOGUE['experiment.shipped'].schema.parse({
    event: 'experiment.shipped',
    site_id: siteId,
    experiment_id: id,
    arm_id: arm.id,
    arm_label: arm.label,
    lift: results.arms.find((a) => a.arm_id === arm.id)?.comparison?.relative_lift ?? null,
    shipped_by: actor.startsWith('token:') ? 'user' : 'automation',
    timestamp: new Date(now).toISOString(),
  });
  await tx.activity.enqueue(siteId, 'experiment.shipped', payload, now);
  return (await tx.experiments.get(siteId, id))!;
}

// ---------------------------------------------------------------------------------------------
// The visitor's arm

export interface Assignment {
  arm_id: string | null;
  label: string | null;
  /**
   * forced: a force_arm override; shipped: the shipped arm for everyone; exposure: the arm of the
   * visitor's first exposure (kept whatever the weights now say); hash: the deterministic hash;
   * holdout: the visitor is in the site's holdout and sees defaults; not_live: the test is ended.
   */
  source: 'forced' | 'shipped' | 'exposure' | 'hash' | 'holdout' | 'not_live';
  bucket: number;
  first_exposed_at: number | null;
}

export async function assignmentFor(r: Repos, row: ExperimentRow, visitorId: string): Promise<Assignment> {
  const arms = await r.experiments.arms(row.site_id, row.id);
  const n = bucket(row.seed, visitorId);
  const label = (id: string | null) => arms.find((a) => a.id === id)?.label ?? null;
  const first = await r.experiments.firstExposure(row.site_id, row.id, visitorId);
  const firstAt = first?.created_at ?? null;
  if (row.status === 'shipped') return { arm_id: row.shipped_arm_id, label: label(row.shipped_arm_id), source: 'shipped', bucket: n, first_exposed_at: firstAt };
  if (row.status === 'ended') return { arm_id: null, label: null, source: 'not_live', bucket: n, first_exposed_at: firstAt };
  const forced = await r.experiments.forcedArm(row.site_id, row.id, visitorId);
  if (forced !== undefined && arms.some((a) => a.id === forced)) return { arm_id: forced, label: label(forced), source: 'forced', bucket: n, first_exposed_at: firstAt };
  const site = await r.sites.get(row.site_id);
  if (site && inHoldout(row.site_id, visitorId, site.holdout_share)) return { arm_id: null, label: null, source: 'holdout', bucket: n, first_exposed_at: firstAt };
  if (first) return { arm_id: first.arm_id, label: label(first.arm_id), source: 'exposure', bucket: n, first_exposed_at: firstAt };
  const arm = assignArm(row.seed, visitorId, arms);
  return { arm_id: arm?.id ?? null, label: arm?.label ?? null, source: 'hash', bucket: n, first_exposed_at: null };
}

// ---------------------------------------------------------------------------------------------
// Core Web Vitals

export type WebVitals = Partial<Record<Vital, number>>;

/**
 * The properties of a `web_vitals` event (top-level like every event property): lcp and inp in
 * milliseconds, cls unitless, each a finite number from 0 to its limit, at least one of them.
 * Returns null for any other event type; throws validation_failed on a bad web_vitals event.
 */
export function webVitalsOf(event: { type: string } & Record<string, unknown>): WebVitals | null {
  if (event.type !== 'web_vitals') return null;
  const out: WebVitals = {};
  for (const m of VITALS) {
    const v = event[m];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > VITAL_LIMITS[m]) {
      throw invalid(m, `a number from 0 to ${VITAL_LIMITS[m]}${m === 'cls' ? '' : ' (milliseconds)'}`);
    }
    out[m] = v;
  }
  if (Object.keys(out).length === 0) throw invalid('lcp', 'a web_vitals event carries at least one of lcp, inp, cls');
  return out;
}

const pathOf = (url: string): string | null => {
  try {
    return new URL(url, 'http://x').pathname;
  } catch {
    return null;
  }
};

/**
 * Counts a visitor's page-view vitals for the arm of its first exposure to each running test. When
 * the event names a URL, only tests the visitor was exposed to on that path count it (vitals of
 * other pages say nothing about the test). The ingestion service calls this in the event's write.
 */
export async function recordWebVitals(tx: Repos, siteId: string, visitorId: string | null, url: unknown, vitals: WebVitals, now: number): Promise<number> {
  if (visitorId === null) return 0;
  const rows = await tx.experiments.runningExposures(siteId, visitorId);
  if (rows.length === 0) return 0;
  const path = typeof url === 'string' ? pathOf(url) : null;
  const armOf = new Map<string, string>();
  const onPath = new Set<string>();
  for (const r of rows) {
    if (!armOf.has(r.experiment_id)) armOf.set(r.experiment_id, r.arm_id);
    if (path === null || pathOf(r.url) === path) onPath.add(r.experiment_id);
  }
  let n = 0;
  for (const [experimentId, armId] of armOf) {
    if (!onPath.has(experimentId)) continue;
    await tx.experiments.insertVitals({ siteId, experimentId, armId, lcp: vitals.lcp ?? null, inp: vitals.inp ?? null, cls: vitals.cls ?? null, now });
    n++;
  }
  return n;
}

export interface GuardrailArm {
  arm_id: string;
  label: string;
  control: boolean;
  p75: number | null;
  n: number;
  verdict: GuardrailVerdict | null;
}

export interface GuardrailMetricStatus {
  metric: Vital;
  poor_threshold: number;
  relative_margin: number;
  absolute_margin: number;
  min_sample: number;
  arms: GuardrailArm[];
}

/** p75 and sample size per arm of each guarded metric since the guardrail's window began, with the verdicts. */
export async function guardrailStatus(r: Repos, row: ExperimentRow): Promise<GuardrailMetricStatus[]> {
  const arms = (await r.experiments.arms(row.site_id, row.id)).sort((a, b) => b.is_control - a.is_control);
  const out: GuardrailMetricStatus[] = [];
  for (const metric of guardrailsOf(row)) {
    const stats = [];
    for (const a of arms) stats.push({ arm: a, ...(await r.experiments.vitalStat(row.id, a.id, metric, row.guardrail_since)) });
    const control = stats.find((s) => s.arm.is_control === 1)!;
    out.push({
      metric,
      poor_threshold: POOR[metric],
      relative_margin: GUARDRAIL_RELATIVE_MARGIN,
      absolute_margin: GUARDRAIL_ABSOLUTE_MARGIN[metric],
      min_sample: GUARDRAIL_MIN_SAMPLE,
      arms: stats.map((s) => ({
        arm_id: s.arm.id,
        label: s.arm.label,
        control: s.arm.is_control === 1,
        p75: s.p75,
        n: s.n,
        verdict: s.arm.is_control === 1 ? null : guardrailVerdict(metric, control, s),
      })),
    });
  }
  return out;
}

/**
 * The guardrail pass over one running test (the worker runs it; it is not evaluated on
 * ingestion, which keeps each web_vitals event to one insert per test). The first metric and
 * variant arm that trips pauses the test and emits experiment.guardrail_paused. Returns whether it paused.
 */
export async function enforceGuardrail(tx: Repos, siteId: string, id: string, now: number): Promise<boolean> {
  const row = await tx.experiments.get(siteId, id);
  if (!row || row.status !== 'running') return false;
  for (const m of await guardrailStatus(tx, row)) {
    const control = m.arms.find((a) => a.control)!;
    const tripped = m.arms.find((a) => a.verdict === 'poor' || a.verdict === 'worse_than_control');
    if (!tripped) continue;
    await tx.experiments.pause(id, `guardrail:${m.metric}:${tripped.arm_id}`, now);
    const payload = CATALOGUE['experiment.guardrail_paused'].schema.parse({
      event: 'experiment.guardrail_paused',
      site_id: siteId,
      experiment_id: id,
      metric: m.metric,
      arm_id: tripped.arm_id,
      arm_p75: tripped.p75,
      control_p75: control.p75,
      timestamp: new Date(now).toISOString(),
    });
    await tx.activity.enqueue(siteId, 'experiment.guardrail_paused', payload, now);
    return true;
  }
  return false;
}

/** Whether a running test would stop early now (read-only; the worker asks before it opens a write). */
export async function earlyStopVerdict(r: Repos, row: ExperimentRow, now: number): Promise<EarlyStop> {
  // Too early: answered without aggregating (the worker asks every pass).
  if (row.started_at === null || now - row.started_at < EARLY_STOP_MIN_RUN_MS) return { stop: false, reason: 'too_early', winning_arm_id: null };
  const arms = (await r.experiments.arms(row.site_id, row.id)).map(armInfo);
  const aggregates = await r.experiments.aggregates(row.site_id, row.id, row.metric_event, now + 1);
  return earlyStop(row.primary_metric, arms, aggregates, now - row.started_at);
}

/** Whether a guarded metric of a running test trips now (read-only; the worker asks before it opens a write). */
export async function guardrailTrips(r: Repos, row: ExperimentRow): Promise<boolean> {
  return (await guardrailStatus(r, row)).some((m) => m.arms.some((a) => a.verdict === 'poor' || a.verdict === 'worse_than_control'));
}

/** Ends a test that set stop_early when the extra-strong early-stopping bar is met; returns whether it ended. */
export async function stopIfSignificant(
  tx: Repos,
  siteId: string,
  id: string,
  now: number,
  precomputed?: { verdict: EarlyStop; results: Results },
): Promise<boolean> {
  const row = await tx.experiments.get(siteId, id);
  if (!row || row.status !== 'running' || row.stop_early !== 1) return false;
  const verdict = precomputed?.verdict ?? (await earlyStopVerdict(tx, row, now));
  if (!verdict.stop) return false;
  await endExperiment(tx, siteId, id, 'significance', 'worker', now, verdict.winning_arm_id, precomputed?.results);
  return true;
}

/** Ends a running or paused test whose scheduled end has passed; returns whether it ended. */
export async function endIfDue(tx: Repos, siteId: string, id: string, now: number, precomputed?: Results): Promise<boolean> {
  const row = await tx.experiments.get(siteId, id);
  if (!row || (row.status !== 'running' && row.status !== 'paused') || row.scheduled_end_at === null || row.scheduled_end_at > now) return false;
  await endExperiment(tx, siteId, id, 'scheduled_end', 'worker', now, undefined, precomputed);
  return true;
}

