import { ArmRanges, assignArm, bucketAfter, fnv1a32, inHoldout } from '../experiments/assign.js';
import type { Status } from '../experiments/rules.js';
import { matchesPage, urlParts, type UrlParts } from '../web/url-match.js';
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

/**
 * Decides every zone of every page matching the URL; undefined when the URL is not a URL or a path.
 * Over the snapshot's plan (planOf): the pages a URL matches are kept per URL, and each zone's decision per
 * what of the visitor it depends on (zoneKey); what is kept is what decideZone gives, made once.
 */
export function decide(snap: SiteSnapshot, visitor: VisitorInput): Decision | undefined {
  const plan = planOf(snap);
  const u = urlPlan(plan, snap, visitor.url);
  if (!u) return undefined;
  const holdout = plan.holdoutHash === null ? false : bucketAfter(plan.holdoutHash, visitor.visitorId) < snap.holdoutShare;
  const zones: ZoneDecision[] = [];
  const forced = plan.forced.has(visitor.visitorId);
  for (const zp of u.zones) zones.push(forced ? decideZone(snap, visitor, zp.z, holdout) : zoneDecision(snap, zp, visitor, holdout));
  return { url: u.parts, holdout, pages: u.pages, zones };
}

/** decide as it was made before plans (every step each time): what the plan's decisions are checked against (decide.test.ts). */
export function decideUnplanned(snap: SiteSnapshot, visitor: VisitorInput): Decision | undefined {
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

/** A running test covering a zone, with what its assignment needs computed once. */
interface RunningPlan {
  e: SnapshotExperiment;
  ranges: ArmRanges<SnapshotArm>;
  /** An arm id's index in e.arms (the first arm with that id, as `find`). */
  armIndex: Map<string, number>;
  /** Whether each arm's variant can be served (armVariant). */
  armOk: boolean[];
}

/** What one zone's decision depends on, per snapshot. */
interface ZonePlan {
  z: SnapshotZone;
  /** A pin_zone or personalization_off applies: for a visitor without force_arm, the decision depends on the holdout alone. */
  overridden: boolean;
  /** A shipped test applies: outside the holdout, the same decision for everyone. */
  shipped: boolean;
  running: RunningPlan[];
  placements: SnapshotPlacement[];
  /** Whether each placement's variant can be served. */
  placementOk: boolean[];
  /** Decisions made, by zoneKey (at most MAX_DECISIONS_PER_ZONE). */
  decisions: Map<string, ZoneDecision>;
}

interface UrlPlan {
  parts: UrlParts;
  pages: { id: string; name: string }[];
  zones: ZonePlan[];
}

/** A snapshot's plan, with the parts of the snapshot it was made from (a test may replace a part of a snapshot: a new plan then). */
interface Plan {
  from: readonly unknown[];
  /** fnv1a32 of the holdout's seed (`holdout:<site>`), null without a holdout. */
  holdoutHash: number | null;
  /** Visitors with a force_arm override: decided step by step, nothing kept. */
  forced: Set<string>;
  zonesOfPage: Map<string, ZonePlan[]>;
  /** URL → its pages and zones (null: not a URL); at most MAX_URLS entries and MAX_URL_CHARS characters of URL, then emptied. */
  urls: Map<string, UrlPlan | null>;
  urlChars: number;
}

/** Bounds of what a snapshot's plan keeps: URLs (and their characters), and decisions a zone. */
const MAX_URLS = 4096;
const MAX_URL_CHARS = 512 * 1024;
const MAX_DECISIONS_PER_ZONE = 256;
const plans = new WeakMap<SiteSnapshot, Plan>();

/** What a snapshot's plan keeps (tests): URLs, their characters, decisions of all its zones; undefined before its first decision. */
export function planSize(snap: SiteSnapshot): { urls: number; urlChars: number; decisions: number } | undefined {
  const plan = plans.get(snap);
  if (!plan) return undefined;
  let decisions = 0;
  for (const list of plan.zonesOfPage.values()) for (const zp of list) decisions += zp.decisions.size;
  return { urls: plan.urls.size, urlChars: plan.urlChars, decisions };
}

export const PLAN_BOUNDS = { urls: MAX_URLS, urlChars: MAX_URL_CHARS, decisionsPerZone: MAX_DECISIONS_PER_ZONE } as const;

function planParts(snap: SiteSnapshot): unknown[] {
  return [snap.siteId, snap.holdoutShare, snap.pages, snap.zones, snap.contents, snap.variants, snap.placements, snap.experiments, snap.overrides];
}

function planOf(snap: SiteSnapshot): Plan {
  let plan = plans.get(snap);
  if (plan) {
    const f = plan.from;
    if (
      f[0] === snap.siteId &&
      f[1] === snap.holdoutShare &&
      f[2] === snap.pages &&
      f[3] === snap.zones &&
      f[4] === snap.contents &&
      f[5] === snap.variants &&
      f[6] === snap.placements &&
      f[7] === snap.experiments &&
      f[8] === snap.overrides
    ) {
      return plan;
    }
  }
  const forced = new Set<string>();
  for (const o of snap.overrides) if (o.kind === 'force_arm' && o.visitor_id !== null) forced.add(o.visitor_id);
  const zonesOfPage = new Map<string, ZonePlan[]>();
  for (const z of snap.zones) {
    let list = zonesOfPage.get(z.page_id);
    if (!list) zonesOfPage.set(z.page_id, (list = []));
    list.push(zonePlan(snap, z));
  }
  plan = {
    from: planParts(snap),
    holdoutHash: snap.holdoutShare > 0 ? fnv1a32(`holdout:${snap.siteId}`) : null,
    forced,
    zonesOfPage,
    urls: new Map(),
    urlChars: 0,
  };
  plans.set(snap, plan);
  return plan;
}

function zonePlan(snap: SiteSnapshot, z: SnapshotZone): ZonePlan {
  const overridden =
    snap.overrides.some((o) => {
      if (o.kind !== 'pin_zone' || o.zone_id !== z.id) return false;
      const v = o.variant_id ? snap.variants.get(o.variant_id) : undefined;
      return v !== undefined && servableByPlacement(v.status);
    }) || snap.overrides.some((o) => o.kind === 'personalization_off' && o.page_id === z.page_id);
  const tests = experimentsOf(snap, z);
  const shipped = tests.shipped.some((e) => {
    const arm = e.arms.find((a) => a.id === e.shipped_arm_id);
    return arm !== undefined && armVariant(snap, arm).ok;
  });
  const running = tests.running.map((e) => {
    const armIndex = new Map<string, number>();
    e.arms.forEach((a, i) => {
      if (!armIndex.has(a.id)) armIndex.set(a.id, i);
    });
    return { e, ranges: new ArmRanges(e.seed, e.arms), armIndex, armOk: e.arms.map((a) => armVariant(snap, a).ok) };
  });
  const placements = placementsOf(snap, z.id);
  const placementOk = placements.map((p) => {
    const v = snap.variants.get(p.variant_id);
    return v !== undefined && servableByPlacement(v.status);
  });
  return { z, overridden, shipped, running, placements, placementOk, decisions: new Map() };
}

/** The pages and zones of a URL (kept per plan, within its bounds); undefined when it is not a URL or a path. */
function urlPlan(plan: Plan, snap: SiteSnapshot, url: string): UrlPlan | undefined {
  const kept = plan.urls.get(url);
  if (kept !== undefined) return kept ?? undefined;
  const parts = urlParts(url);
  let u: UrlPlan | null = null;
  if (parts) {
    const pages = snap.pages.filter((p) => matchesPage(p.match_type, p.pattern, parts));
    const pageIds = new Set(pages.map((p) => p.id));
    const zones: ZonePlan[] = [];
    // In snapshot order of the zones, as decideUnplanned.
    for (const z of snap.zones) if (pageIds.has(z.page_id)) zones.push(zonePlanOf(plan, z));
    u = { parts: Object.freeze(parts), pages: Object.freeze(pages.map((p) => Object.freeze({ id: p.id, name: p.name }))) as UrlPlan['pages'], zones };
  }
  if (plan.urls.size >= MAX_URLS || plan.urlChars + url.length > MAX_URL_CHARS) {
    plan.urls.clear();
    plan.urlChars = 0;
  }
  if (url.length <= MAX_URL_CHARS) {
    plan.urls.set(url, u);
    plan.urlChars += url.length;
  }
  return u ?? undefined;
}

function zonePlanOf(plan: Plan, z: SnapshotZone): ZonePlan {
  for (const zp of plan.zonesOfPage.get(z.page_id)!) if (zp.z === z) return zp;
  throw new Error(`zone ${z.id} is not in the plan`);
}

/**
 * What of the visitor a zone's decision depends on (a visitor without force_arm), as a key: the holdout; the arm
 * of each running test looked at (its index, kept from earlier or assigned); the placement that applies, and
 * which placements looked at before it the visitor's segments hold although their variant cannot be served (the
 * others looked at are not held, or have no segment). The same key, the same decideZone result.
 */
function zoneKey(zp: ZonePlan, visitor: VisitorInput, holdout: boolean): string {
  if (holdout) return 'h';
  if (zp.overridden || zp.shipped) return '';
  let key = '';
  for (const r of zp.running) {
    const earlier = visitor.earlierArms.get(r.e.id);
    let i = earlier === undefined ? undefined : r.armIndex.get(earlier);
    let kept = true;
    if (i === undefined) {
      kept = false;
      const arm = r.ranges.assign(visitor.visitorId);
      if (arm === undefined) {
        key += 'n,';
        continue;
      }
      i = r.e.arms.indexOf(arm);
    }
    key += kept ? `k${i},` : `a${i},`;
    if (r.armOk[i]) return key;
  }
  key += 'p';
  const placements = zp.placements;
  for (let i = 0; i < placements.length; i++) {
    const segment = placements[i]!.segment_id;
    if (segment !== null && !visitor.segmentIds.has(segment)) continue;
    if (zp.placementOk[i]) return `${key}${i}`;
    if (segment !== null) key += `s${i},`;
  }
  return key;
}

function zoneDecision(snap: SiteSnapshot, zp: ZonePlan, visitor: VisitorInput, holdout: boolean): ZoneDecision {
  const key = zoneKey(zp, visitor, holdout);
  let d = zp.decisions.get(key);
  if (d === undefined) {
    d = frozen(decideZone(snap, visitor, zp.z, holdout));
    if (zp.decisions.size < MAX_DECISIONS_PER_ZONE) {
      zp.decisions.set(key, d);
      keptAnswers.set(d, answerOf(d));
    }
  }
  return d;
}

/** A kept decision, shared by visitors: frozen with its parts. */
function frozen(d: ZoneDecision): ZoneDecision {
  for (const step of d.chain) Object.freeze(step);
  Object.freeze(d.chain);
  if (d.content) Object.freeze(d.content);
  return Object.freeze(d);
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
/** A zone's answer text and its length in UTF-8 bytes. */
interface ZoneAnswer {
  text: string;
  bytes: number;
}
type AnswerTrie = Map<string | null, AnswerTrie | ZoneAnswer>;
const zoneAnswers = new WeakMap<SiteSnapshot, { root: AnswerTrie; size: number }>();
/** The answer of a decision a plan keeps (zoneDecision): found from the decision itself, without the trie. */
const keptAnswers = new WeakMap<ZoneDecision, ZoneAnswer>();

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
  return zonesAnswer(snap, zones).text;
}

/** zonesAnswerJson and its length in UTF-8 bytes (each zone's counted once, when its text is made). */
export function zonesAnswer(snap: SiteSnapshot, zones: readonly ZoneDecision[]): ZoneAnswer {
  let out = '[';
  let bytes = 2 + (zones.length > 0 ? zones.length - 1 : 0);
  for (let i = 0; i < zones.length; i++) {
    const z = zones[i]!;
    const a = keptAnswers.get(z) ?? trieAnswer(snap, z);
    bytes += a.bytes;
    out += i === 0 ? a.text : `,${a.text}`;
  }
  return { text: `${out}]`, bytes };
}

function trieAnswer(snap: SiteSnapshot, z: ZoneDecision): ZoneAnswer {
  let kept = zoneAnswers.get(snap);
  if (!kept) zoneAnswers.set(snap, (kept = { root: new Map(), size: 0 }));
  const path = [z.zone_id, z.content === null ? null : z.content.id, z.variant_id, z.experiment_id, z.arm_id];
  let node = kept.root;
  for (const k of path) {
    let next = node.get(k) as AnswerTrie | undefined;
    if (next === undefined) node.set(k, (next = new Map()));
    node = next;
  }
  let a = node.get(z.reason) as ZoneAnswer | undefined;
  if (a === undefined) {
    a = answerOf(z);
    if (kept.size < MAX_ANSWERS_PER_SNAPSHOT) {
      node.set(z.reason, a);
      kept.size++;
    }
  }
  return a;
}

function answerOf(z: ZoneDecision): ZoneAnswer {
  const text = zoneAnswerJson(z);
  return { text, bytes: Buffer.byteLength(text) };
}
