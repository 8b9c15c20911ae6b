/**
 * The Core Web Vitals guardrail of layout tests: p75 per arm and guarded metric, the verdicts,
 * and the worker's pause when a variant arm trips.
 */
import type { Repos } from '../../store/repos.js';
import type { GuardrailStatusView } from './views.js';
import type { ExperimentRow } from '../../store/experiments.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import {
  GUARDRAIL_ABSOLUTE_MARGIN,
  GUARDRAIL_MIN_SAMPLE,
  GUARDRAIL_RELATIVE_MARGIN,
  guardrailVerdict,
  POOR,
  VITALS,
  type Vital,
} from './rules.js';

export function guardrailsOf(row: ExperimentRow): Vital[] {
  const parsed = JSON.parse(row.guardrail_metrics) as unknown;
  return Array.isArray(parsed) ? (parsed.filter((m) => (VITALS as readonly unknown[]).includes(m)) as Vital[]) : [];
}

/** One guarded metric of the guardrail status view: thresholds and the arms' p75, sample and verdict. */
export type GuardrailMetricStatus = GuardrailStatusView['metrics'][number];
export type GuardrailArm = GuardrailMetricStatus['arms'][number];

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

/** Whether a guarded metric of a running test trips now (read-only; the worker asks before it opens a write). */
export async function guardrailTrips(r: Repos, row: ExperimentRow): Promise<boolean> {
  return (await guardrailStatus(r, row)).some((m) => m.arms.some((a) => a.verdict === 'poor' || a.verdict === 'worse_than_control'));
}
