import { assignArm, inHoldout } from '../experiments/assign.js';
import type { Status } from '../experiments/rules.js';
import { matchesPage, urlParts } from '../web/url-match.js';
import { servableByArm, servableByPlacement } from '../web/lifecycle.js';
import type { ContentKind } from '../../store/content.js';
import type { OverrideRow } from '../../store/overrides.js';
import type { MatchType } from '../../store/pages.js';
import type { VariantStatus } from '../../store/variants.js';

/**
 * The decision: for one visitor on one URL, which content every zone of every
 * matching page shows, and why. Pure (no I/O, no clock, no randomness): the
 * same snapshot and visitor always give the same answer.
 *
 * Precedence, per zone, first that applies wins:
 *   1. override   force_arm (this visitor, QA) > pin_zone (this zone, everyone)
 *                 > personalization_off (this page: the zone default)
 *   2. holdout    a visitor in the site's holdout sees the zone default
 *                 (overrides still apply above)
 *   3. shipped    a shipped experiment on the zone (or its page): the shipped
 *                 arm's variant for everyone (a control arm: the zone default)
 *   4. experiment a running experiment on the zone (or its page): the visitor's
 *                 earlier arm if it has one, else assignArm(seed, visitor, arms)
 *   5. placement  the enabled placement with the highest priority whose segment
 *                 the visitor is in (or with no segment); ties: the older id
 *   6. default    the zone's default content (possibly none)
 * A variant that is disabled or archived is never served: a step that would
 * serve one is skipped (and says so in the reason chain).
 */

export interface SnapshotPage {
  id: string;
  name: string;
  match_type: MatchType;
  pattern: string;
}

export interface SnapshotZone {
  id: string;
  page_id: string;
  name: string;
  selector: string;
  default_content_id: string | null;
}

export interface SnapshotContent {
  id: string;
  kind: ContentKind;
  body: string;
}

export interface SnapshotVariant {
  id: string;
  zone_id: string;
  content_id: string;
  status: VariantStatus;
}

export interface SnapshotPlacement {
  id: string;
  zone_id: string;
  variant_id: string;
  segment_id: string | null;
  priority: number;
}

export interface SnapshotArm {
  id: string;
  label: string;
  is_control: boolean;
  variant_id: string | null;
  weight: number;
}

export interface SnapshotExperiment {
  id: string;
  page_id: string | null;
  zone_id: string | null;
  status: Status;
  seed: string;
  shipped_arm_id: string | null;
  /** Arms in their stored order (assignment ranges follow it). */
  arms: SnapshotArm[];
}

export type SnapshotOverride = Pick<OverrideRow, 'id' | 'kind' | 'page_id' | 'zone_id' | 'variant_id' | 'experiment_id' | 'arm_id' | 'visitor_id' | 'set_by' | 'set_at'>;

/** Everything the decision reads about a site. Placements: enabled only; overrides: active only. */
export interface SiteSnapshot {
  siteId: string;
  holdoutShare: number;
  pages: SnapshotPage[];
  zones: SnapshotZone[];
  contents: ReadonlyMap<string, SnapshotContent>;
  variants: ReadonlyMap<string, SnapshotVariant>;
  placements: SnapshotPlacement[];
  experiments: SnapshotExperiment[];
  overrides: SnapshotOverride[];
}

export interface VisitorInput {
  visitorId: string;
  segmentIds: ReadonlySet<string>;
  url: string;
  /** The arm of each experiment the visitor was already exposed to. */
  earlierArms: ReadonlyMap<string, string>;
}

export type DecisionReason =
  | 'override_force_arm'
  | 'override_pin_zone'
  | 'override_personalization_off'
  | 'holdout'
  | 'shipped_experiment'
  | 'experiment_arm'
  | 'placement'
  | 'default';

export interface ReasonStep {
  step: 'override' | 'holdout' | 'shipped' | 'experiment' | 'placement' | 'default';
  /** applied: decided; skipped: would apply but its variant cannot be served; not_matched: a placement for a segment the visitor is not in; none: nothing there. */
  outcome: 'applied' | 'skipped' | 'not_matched' | 'none';
  detail: string;
}

export interface ZoneDecision {
  zone_id: string;
  page_id: string;
  name: string;
  selector: string;
  content: { id: string; kind: ContentKind; body: string } | null;
  variant_id: string | null;
  experiment_id: string | null;
  arm_id: string | null;
  placement_id: string | null;
  override_id: string | null;
  holdout: boolean;
  reason: DecisionReason;
  /** Every precedence step looked at, in order, ending with the one that applied. */
  chain: ReasonStep[];
}

export interface Decision {
  url: { path: string; query: string };
  holdout: boolean;
  pages: { id: string; name: string }[];
  zones: ZoneDecision[];
}

/** Zones of a page are covered by an experiment on that zone, or on the whole page. */
function covers(e: SnapshotExperiment, z: SnapshotZone): boolean {
  return e.zone_id !== null ? e.zone_id === z.id : e.page_id === z.page_id;
}

/** Decides every zone of every page matching the URL; undefined when the URL is not a URL or a path. */
export function decide(snap: SiteSnapshot, visitor: VisitorInput): Decision | undefined {
  const parts = urlParts(visitor.url);
  if (!parts) return undefined;
  const pages = snap.pages.filter((p) => matchesPage(p.match_type, p.pattern, parts));
  const pageIds = new Set(pages.map((p) => p.id));
  const holdout = inHoldout(snap.siteId, visitor.visitorId, snap.holdoutShare);
  const zones: ZoneDecision[] = [];
  for (const z of snap.zones) {
    if (pageIds.has(z.page_id)) zones.push(decideZone(snap, visitor, z, holdout));
  }
  return { url: parts, holdout, pages: pages.map((p) => ({ id: p.id, name: p.name })), zones };
}

/** Placements per zone, in snapshot order, computed once per snapshot (a snapshot is never changed once built). */
const byZone = new WeakMap<SiteSnapshot, Map<string, SnapshotPlacement[]>>();
const NONE: SnapshotPlacement[] = [];

function placementsOf(snap: SiteSnapshot, zoneId: string): SnapshotPlacement[] {
  let index = byZone.get(snap);
  if (!index) {
    index = new Map();
    for (const p of snap.placements) {
      let list = index.get(p.zone_id);
      if (!list) index.set(p.zone_id, (list = []));
      list.push(p);
    }
    byZone.set(snap, index);
  }
  return index.get(zoneId) ?? NONE;
}

/**
 * The shipped and the running experiments covering a zone, each in snapshot order, computed once per list of
 * experiments (a snapshot's, never changed once built; keyed by the list itself) and zone (its object).
 */
const testsByZone = new WeakMap<readonly SnapshotExperiment[], WeakMap<SnapshotZone, { shipped: SnapshotExperiment[]; running: SnapshotExperiment[] }>>();

function experimentsOf(snap: SiteSnapshot, z: SnapshotZone): { shipped: SnapshotExperiment[]; running: SnapshotExperiment[] } {
  let index = testsByZone.get(snap.experiments);
  if (!index) testsByZone.set(snap.experiments, (index = new WeakMap()));
  let tests = index.get(z);
  if (!tests) {
    tests = { shipped: snap.experiments.filter((e) => e.status === 'shipped' && covers(e, z)), running: snap.experiments.filter((e) => e.status === 'running' && covers(e, z)) };
    index.set(z, tests);
  }
  return tests;
}

function contentOf(snap: SiteSnapshot, id: string | null): ZoneDecision['content'] {
  const c = id === null ? undefined : snap.contents.get(id);
  return c ? { id: c.id, kind: c.kind, body: c.body } : null;
}

/** The variant an arm serves (null: the control, the zone default), or why it cannot be served. */
function armVariant(snap: SiteSnapshot, arm: SnapshotArm): { ok: true; variantId: string | null } | { ok: false; why: string } {
  if (arm.variant_id === null) return { ok: true, variantId: null };
  const v = snap.variants.get(arm.variant_id);
  if (!v) return { ok: false, why: `variant ${arm.variant_id} no longer exists` };
  if (!servableByArm(v.status)) return { ok: false, why: `variant ${v.id} is ${v.status}` };
  return { ok: true, variantId: v.id };
}

interface Applied {
  variantId?: string | null;
  experimentId?: string | null;
  armId?: string | null;
  placementId?: string | null;
  overrideId?: string | null;
}

function result(snap: SiteSnapshot, z: SnapshotZone, holdout: boolean, chain: ReasonStep[], reason: DecisionReason, r: Applied): ZoneDecision {
  const variant = r.variantId ? snap.variants.get(r.variantId) : undefined;
  return {
    zone_id: z.id,
    page_id: z.page_id,
    name: z.name,
    selector: z.selector,
    holdout,
    content: contentOf(snap, variant ? variant.content_id : z.default_content_id),
    variant_id: variant ? variant.id : null,
    experiment_id: r.experimentId ?? null,
    arm_id: r.armId ?? null,
    placement_id: r.placementId ?? null,
    override_id: r.overrideId ?? null,
    reason,
    chain,
  };
}

function decideZone(snap: SiteSnapshot, visitor: VisitorInput, z: SnapshotZone, holdout: boolean): ZoneDecision {
  const chain: ReasonStep[] = [];
  // 1. Overrides: force_arm > pin_zone > personalization_off.
  let overrideSeen = false;
  for (const o of snap.overrides) {
    if (o.kind !== 'force_arm' || o.visitor_id !== visitor.visitorId) continue;
    const e = snap.experiments.find((x) => x.id === o.experiment_id);
    if (!e || !covers(e, z)) continue;
    overrideSeen = true;
    const arm = e.arms.find((a) => a.id === o.arm_id);
    if (!arm) {
      chain.push({ step: 'override', outcome: 'skipped', detail: `force_arm ${o.id}: arm ${o.arm_id ?? '?'} is not an arm of ${e.id}` });
      continue;
    }
    const av = armVariant(snap, arm);
    if (!av.ok) {
      chain.push({ step: 'override', outcome: 'skipped', detail: `force_arm ${o.id}: ${av.why}` });
      continue;
    }
    chain.push({
      step: 'override',
      outcome: 'applied',
      detail: `force_arm ${o.id} set by ${o.set_by}: visitor forced into arm ${arm.label} (${arm.id}) of experiment ${e.id}${arm.variant_id === null ? ', the control (zone default)' : ''}`,
    });
    return result(snap, z, holdout, chain, 'override_force_arm', { variantId: av.variantId, experimentId: e.id, armId: arm.id, overrideId: o.id });
  }
  for (const o of snap.overrides) {
    if (o.kind !== 'pin_zone' || o.zone_id !== z.id) continue;
    overrideSeen = true;
    const v = o.variant_id ? snap.variants.get(o.variant_id) : undefined;
    if (!v || !servableByPlacement(v.status)) {
      chain.push({ step: 'override', outcome: 'skipped', detail: `pin_zone ${o.id}: variant ${o.variant_id ?? '?'} is ${v ? v.status : 'gone'}` });
      continue;
    }
    chain.push({ step: 'override', outcome: 'applied', detail: `pin_zone ${o.id} set by ${o.set_by}: zone pinned to variant ${v.id} for everyone` });
    return result(snap, z, holdout, chain, 'override_pin_zone', { variantId: v.id, overrideId: o.id });
  }
  const off = snap.overrides.find((o) => o.kind === 'personalization_off' && o.page_id === z.page_id);
  if (off) {
    chain.push({ step: 'override', outcome: 'applied', detail: `personalization_off ${off.id} set by ${off.set_by}: the page shows zone defaults` });
    return result(snap, z, holdout, chain, 'override_personalization_off', { overrideId: off.id });
  }
  if (!overrideSeen) chain.push({ step: 'override', outcome: 'none', detail: 'no active override for this zone or visitor' });

  // 2. Holdout.
  if (holdout) {
    chain.push({ step: 'holdout', outcome: 'applied', detail: `visitor is in the site holdout (${snap.holdoutShare}): zone default` });
    return result(snap, z, holdout, chain, 'holdout', {});
  }
  chain.push({ step: 'holdout', outcome: 'none', detail: snap.holdoutShare > 0 ? `visitor is outside the holdout (${snap.holdoutShare})` : 'the site has no holdout' });

  // 3. Shipped experiments.
  let shippedSeen = false;
  const tests = experimentsOf(snap, z);
  for (const e of tests.shipped) {
    shippedSeen = true;
    const arm = e.arms.find((a) => a.id === e.shipped_arm_id);
    if (!arm) {
      chain.push({ step: 'shipped', outcome: 'skipped', detail: `experiment ${e.id}: shipped arm ${e.shipped_arm_id ?? '?'} not found` });
      continue;
    }
    const av = armVariant(snap, arm);
    if (!av.ok) {
      chain.push({ step: 'shipped', outcome: 'skipped', detail: `experiment ${e.id}: ${av.why}` });
      continue;
    }
    chain.push({
      step: 'shipped',
      outcome: 'applied',
      detail: `experiment ${e.id} shipped arm ${arm.label} (${arm.id}) for everyone${arm.variant_id === null ? ': the control (zone default)' : ''}`,
    });
    return result(snap, z, holdout, chain, 'shipped_experiment', { variantId: av.variantId, experimentId: e.id, armId: arm.id });
  }
  if (!shippedSeen) chain.push({ step: 'shipped', outcome: 'none', detail: 'no shipped experiment on this zone' });

  // 4. Running experiments.
  let runningSeen = false;
  for (const e of tests.running) {
    runningSeen = true;
    const earlier = visitor.earlierArms.get(e.id);
    const kept = earlier === undefined ? undefined : e.arms.find((a) => a.id === earlier);
    const arm = kept ?? assignArm(e.seed, visitor.visitorId, e.arms);
    if (!arm) {
      chain.push({ step: 'experiment', outcome: 'skipped', detail: `experiment ${e.id}: no arm with a weight above 0` });
      continue;
    }
    const av = armVariant(snap, arm);
    if (!av.ok) {
      chain.push({ step: 'experiment', outcome: 'skipped', detail: `experiment ${e.id} arm ${arm.id}: ${av.why}` });
      continue;
    }
    chain.push({
      step: 'experiment',
      outcome: 'applied',
      detail: `experiment ${e.id}: ${kept ? 'visitor keeps its earlier arm' : `assigned by hash of seed and visitor id`} ${arm.label} (${arm.id})${arm.variant_id === null ? ', the control (zone default)' : ''}`,
    });
    return result(snap, z, holdout, chain, 'experiment_arm', { variantId: av.variantId, experimentId: e.id, armId: arm.id });
  }
  if (!runningSeen) chain.push({ step: 'experiment', outcome: 'none', detail: 'no running experiment on this zone' });

  // 5. Placements (already ordered: priority descending, then id).
  let placementSeen = false;
  for (const p of placementsOf(snap, z.id)) {
    if (p.segment_id !== null && !visitor.segmentIds.has(p.segment_id)) {
      // Only placements ranked above the one that applies are looked at: each says which segment it wanted.
      chain.push({ step: 'placement', outcome: 'not_matched', detail: `placement ${p.id} (priority ${p.priority}) is for segment ${p.segment_id}, which the visitor is not in` });
      continue;
    }
    placementSeen = true;
    const v = snap.variants.get(p.variant_id);
    if (!v || !servableByPlacement(v.status)) {
      chain.push({ step: 'placement', outcome: 'skipped', detail: `placement ${p.id}: variant ${p.variant_id} is ${v ? v.status : 'gone'}` });
      continue;
    }
    chain.push({
      step: 'placement',
      outcome: 'applied',
      detail: `placement ${p.id} (priority ${p.priority}) for ${p.segment_id === null ? 'everyone' : `segment ${p.segment_id}, which the visitor is in`}: variant ${v.id}`,
    });
    return result(snap, z, holdout, chain, 'placement', { variantId: v.id, placementId: p.id });
  }
  if (!placementSeen) chain.push({ step: 'placement', outcome: 'none', detail: 'no placement for the visitor\u2019s segments' });

  // 6. Default.
  chain.push({ step: 'default', outcome: 'applied', detail: z.default_content_id === null ? 'zone has no default content' : `zone default content ${z.default_content_id}` });
  return result(snap, z, holdout, chain, 'default', {});
}

/** Placements in decision order: priority descending, then id ascending. */
export function orderPlacements<P extends { priority: number; id: string }>(placements: readonly P[]): P[] {
  return [...placements].sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Each zone's part of GET /api/decide's answer, as JSON text, kept per snapshot (a snapshot is never changed once
 * built, and a change to the site's configuration builds a new one, so a kept text never outlives what it says).
 * Within one snapshot the text follows from the zone (its name and selector), the content (its kind and body), the
 * variant, test, arm and reason: those values, null included, are the keys of nested maps (no key text is built, and
 * the ids are the snapshot's own strings, whose hashes are kept). At most this many texts a snapshot; past it, texts
 * are made each time.
 */
const MAX_ANSWERS_PER_SNAPSHOT = 10_000;
type AnswerTrie = Map<string | null, AnswerTrie | string>;
const zoneAnswers = new WeakMap<SiteSnapshot, { root: AnswerTrie; size: number }>();

/** The JSON of one zone as GET /api/decide answers it (the fields and order of its `zones` items). */
export function zoneAnswerJson(z: ZoneDecision): string {
  return JSON.stringify({
    zone_id: z.zone_id,
    name: z.name,
    selector: z.selector,
    content: z.content === null ? null : { kind: z.content.kind, body: z.content.body },
    variant_id: z.variant_id,
    experiment_id: z.experiment_id,
    arm_id: z.arm_id,
    reason: z.reason,
  });
}

/** `zones` (decided over `snap`) as the JSON array GET /api/decide answers: the same text as JSON.stringify of their zoneAnswerJson objects. */
export function zonesAnswerJson(snap: SiteSnapshot, zones: readonly ZoneDecision[]): string {
  let kept = zoneAnswers.get(snap);
  if (!kept) zoneAnswers.set(snap, (kept = { root: new Map(), size: 0 }));
  let out = '[';
  for (let i = 0; i < zones.length; i++) {
    const z = zones[i]!;
    const path = [z.zone_id, z.content === null ? null : z.content.id, z.variant_id, z.experiment_id, z.arm_id];
    let node = kept.root;
    for (const k of path) {
      let next = node.get(k) as AnswerTrie | undefined;
      if (next === undefined) node.set(k, (next = new Map()));
      node = next;
    }
    let text = node.get(z.reason) as string | undefined;
    if (text === undefined) {
      text = zoneAnswerJson(z);
      if (kept.size < MAX_ANSWERS_PER_SNAPSHOT) {
        node.set(z.reason, text);
        kept.size++;
      }
    }
    out += i === 0 ? text : `,${text}`;
  }
  return `${out}]`;
}
