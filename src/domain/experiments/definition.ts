/**
 * Creating and changing layout tests: the target (a zone or a page), the arms, the metric and
 * the schedule, checked against the site's zones and variants. Every function that writes takes
 * the `tx` of one write operation and does every read through it.
 */
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { Repos } from '../../store/repos.js';
import type { ExperimentRow, NewArm } from '../../store/experiments.js';
import { editableFields, type PrimaryMetric, type Vital } from './rules.js';

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

/** A validation_failed error naming the offending field. */
export const invalid = (field: string, message: string) => new AppError('validation_failed', `${field}: ${message}`, { field });

export async function requireExperiment(r: Repos, siteId: string, id: string): Promise<ExperimentRow> {
  const row = await r.experiments.get(siteId, id);
  if (!row) throw new AppError('not_found', `no layout test ${JSON.stringify(id)} in this site`, { field: 'id' });
  return row;
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
