/** The arm a visitor gets in a layout test, and why (read-only). */
import type { Repos } from '../../store/repos.js';
import type { ExperimentRow } from '../../store/experiments.js';
import { assignArm, bucket, inHoldout } from './assign.js';

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
