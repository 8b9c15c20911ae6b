import type { Store } from '../../store/store.js';
import type { Repos, RepoShared, WriteMerge } from '../../store/repos.js';
import { decide, orderPlacements, type Decision, type SiteSnapshot, type SnapshotContent, type SnapshotExperiment, type SnapshotVariant } from '../decide/decide.js';
import { factsFromRows, type ExposureInsert, type FactsRow } from '../../store/exposures.js';

/**
 * On PostgreSQL, other instances' changes arrive as notifications (svc_web, sent
 * by triggers at commit); as a fallback for a notification still in flight or
 * lost with the connection, a snapshot is reloaded after this long at the latest
 * (the default of SVC_DECIDE_CACHE_FALLBACK_MS).
 */
export const PG_FALLBACK_MS = 2_000;

interface Cached {
  snap: SiteSnapshot;
  version: number;
  at: number;
}

/**
 * Per-site decision snapshots, shared by every repository set of one store
 * (keyed by its RepoShared, so a write operation's `tx` reaches the same cache).
 * Validity: on SQLite the site's row in web_versions (bumped by triggers on any
 * change, by any code path or process) is read on every decision, one indexed
 * look-up; on PostgreSQL the svc_web notification drops the cache, with a
 * `fallbackMs` fallback. Changes made in this process also invalidate at once.
 */
export class DecisionCache {
  private readonly snaps = new Map<string, Cached>();
  private readonly loading = new Map<string, Promise<Cached>>();
  /** Bumped by every invalidation: a load that started before it is not cached. */
  private generation = 0;
  /** PostgreSQL only: the longest a snapshot is used without a notification. */
  fallbackMs = PG_FALLBACK_MS;

  invalidate(siteId?: string): void {
    this.generation++;
    if (siteId === undefined) this.snaps.clear();
    else this.snaps.delete(siteId);
  }

  /**
   * The site's snapshot. `version` (SQLite): the site's configuration version when the caller
   * has just read it (ExposuresRepo.decisionFacts), else it is read here.
   */
  async get(r: Repos, siteId: string, version?: number | null): Promise<SiteSnapshot> {
    const now = Date.now();
    const hit = this.snaps.get(siteId);
    if (hit) {
      if (r.sql.dialect === 'sqlite') {
        if ((typeof version === 'number' ? version : await r.webConfig.version(siteId)) === hit.version) return hit.snap;
      } else if (now - hit.at < this.fallbackMs) return hit.snap;
    }
    let p = this.loading.get(siteId);
    if (!p) {
      const gen = this.generation;
      p = loadSnapshot(r, siteId).then((c) => {
        if (gen === this.generation) {
          if (this.snaps.size > 10_000) this.snaps.clear();
          this.snaps.set(siteId, c);
        }
        return c;
      });
      this.loading.set(siteId, p);
      void p.then(
        () => this.loading.delete(siteId),
        () => this.loading.delete(siteId),
      );
    }
    return (await p).snap;
  }
}

const caches = new WeakMap<RepoShared, DecisionCache>();
const listening = new WeakSet<Store>();

/** The decision cache of a store (or of the `tx` of one of its write operations). */
export function decisionCache(r: Repos): DecisionCache {
  let c = caches.get(r.shared);
  if (!c) {
    c = new DecisionCache();
    caches.set(r.shared, c);
  }
  return c;
}

/** Registers, once per store, the PostgreSQL notification that drops the cache. */
function listen(store: Store): void {
  if (listening.has(store)) return;
  listening.add(store);
  const cache = decisionCache(store);
  store.onRemoteChange((topic) => {
    if (topic === 'web' || topic === 'all') cache.invalidate();
  });
}

/** Reads everything the decision needs about a site. */
export async function loadSnapshot(r: Repos, siteId: string): Promise<Cached> {
  const version = await r.webConfig.version(siteId);
  const [holdoutShare, pages, zones, contents, variants, placements, experiments, arms, overrides] = await Promise.all([
    r.webConfig.holdoutShare(siteId),
    r.pages.list(siteId),
    r.zones.list(siteId),
    r.content.list(siteId),
    r.variants.list(siteId, {}),
    r.placements.list(siteId, {}),
    r.experimentRefs.list(siteId),
    r.experimentRefs.arms(siteId),
    r.overrides.list(siteId, true),
  ]);
  const contentMap = new Map<string, SnapshotContent>();
  for (const c of contents) contentMap.set(c.id, { id: c.id, kind: c.kind, body: c.body });
  const variantMap = new Map<string, SnapshotVariant>();
  for (const v of variants) variantMap.set(v.id, { id: v.id, zone_id: v.zone_id, content_id: v.content_id, status: v.status });
  const armsOf = new Map<string, SnapshotExperiment['arms']>();
  for (const a of arms) {
    let list = armsOf.get(a.experiment_id);
    if (!list) armsOf.set(a.experiment_id, (list = []));
    list.push({ id: a.id, label: a.label, is_control: Number(a.is_control) === 1, variant_id: a.variant_id, weight: Number(a.weight) });
  }
  // Every status (force_arm overrides reach paused and draft tests for QA); the decision applies only
  // running and shipped ones. Shipped: the most recently shipped first; running: the earliest started first.
  const applied = [...experiments].sort((a, b) => Number(b.shipped_at ?? 0) - Number(a.shipped_at ?? 0) || Number(a.started_at ?? 0) - Number(b.started_at ?? 0) || (a.id < b.id ? -1 : 1));
  const snap: SiteSnapshot = {
    siteId,
    holdoutShare: Number(holdoutShare),
    pages: pages.map((p) => ({ id: p.id, name: p.name, match_type: p.match_type, pattern: p.pattern })),
    zones: zones.map((z) => ({ id: z.id, page_id: z.page_id, name: z.name, selector: z.selector, default_content_id: z.default_content_id })),
    contents: contentMap,
    variants: variantMap,
    placements: orderPlacements(
      placements
        .filter((p) => Number(p.enabled) === 1)
        .map((p) => ({ id: p.id, zone_id: p.zone_id, variant_id: p.variant_id, segment_id: p.segment_id, priority: Number(p.priority) })),
    ),
    experiments: applied.map((e) => ({
      id: e.id,
      page_id: e.page_id,
      zone_id: e.zone_id,
      status: e.status,
      seed: e.seed,
      shipped_arm_id: e.shipped_arm_id,
      arms: armsOf.get(e.id) ?? [],
    })),
    overrides: overrides.map((o) => ({
      id: o.id,
      kind: o.kind,
      page_id: o.page_id,
      zone_id: o.zone_id,
      variant_id: o.variant_id,
      experiment_id: o.experiment_id,
      arm_id: o.arm_id,
      visitor_id: o.visitor_id,
      set_by: o.set_by,
      set_at: Number(o.set_at),
    })),
  };
  return { snap, version, at: Date.now() };
}

export interface VisitorFacts {
  visitorId: string;
  profileId: string | null;
  segmentIds: string[];
  earlierArms: Map<string, string>;
}

/** A decision with the visitor facts it was made from. */
export interface DecisionResult {
  decision: Decision;
  visitor: VisitorFacts;
  /** The snapshot decided over (what the answer's texts are kept for: zonesAnswerJson). */
  snap: SiteSnapshot;
}

/**
 * What a PostgreSQL instance last knew of a visitor's facts (DecisionService.decideAndRecord): the rows a decision
 * is made from without reading them, checked by the statement that stores its exposures. `null`: read them
 * first (a merged profile: what the decision uses is then read past the merge, which the check does not cover).
 */
interface KnownFacts {
  rows: FactsRow[];
  visitor: Omit<VisitorFacts, 'visitorId'>;
}

/** The exposures of consecutive decisions of one group transaction (WriteOptions.merge; one function, so they merge). */
function insertDecisions(tx: Repos, items: readonly ExposureInsert[][]): Promise<void> {
  return tx.exposures.insertDecisions(items);
}

/** At most this many visitors' facts are kept per store (the oldest entry goes first). */
const MAX_KNOWN = 20_000;
/** After this many checks in a row that found other facts, a decision is stored as made from the facts just read (the plain insert, as before the check). */
const MAX_CHECKED_TRIES = 3;
const NO_FACTS: KnownFacts = { rows: [], visitor: { profileId: null, segmentIds: [], earlierArms: new Map() } };

/** Decisions over the cached snapshot: for the preview and explain tools (nothing stored) and GET /api/decide (exposures stored). */
export class DecisionService {
  private readonly cache: DecisionCache;
  /** PostgreSQL: visitors' facts as this instance's last decision or read left them (site and visitor as key). */
  private readonly known = new Map<string, KnownFacts | null>();

  constructor(private readonly store: Store) {
    this.cache = decisionCache(store);
    listen(store);
  }

  invalidate(siteId: string): void {
    this.cache.invalidate(siteId);
  }

  /** The visitor's facts read (one statement), past a merged profile; `rows`: what was read. */
  private async readFacts(siteId: string, visitorId: string): Promise<{ version: number | null; rows: FactsRow[]; visitor: VisitorFacts }> {
    const { facts: f, rows } = await this.store.exposures.decisionFactsRead(siteId, visitorId);
    return { version: f.version, rows, visitor: { visitorId, ...(await this.followMerge(siteId, visitorId, f)) } };
  }

  private async followMerge(
    siteId: string,
    visitorId: string,
    f: Pick<VisitorFacts, 'segmentIds' | 'earlierArms'> & { profileId: string | null | undefined },
  ): Promise<Omit<VisitorFacts, 'visitorId'>> {
    let profileId = f.profileId;
    let segmentIds = f.segmentIds;
    if (profileId === undefined) {
      // A merged profile: follow the merge.
      profileId = await this.store.visitors.profileOf(siteId, visitorId);
      segmentIds = profileId === null ? [] : await this.store.visitors.segmentsOfProfile(profileId);
    }
    return { profileId, segmentIds, earlierArms: f.earlierArms };
  }

  /** The site's snapshot and the visitor's facts: one statement, and the snapshot's reload when the site changed. */
  private async inputs(siteId: string, visitorId: string): Promise<{ snap: SiteSnapshot; visitor: VisitorFacts }> {
    const f = await this.readFacts(siteId, visitorId);
    const snap = await this.cache.get(this.store, siteId, f.version);
    return { snap, visitor: f.visitor };
  }

  /** Decides without recording anything; undefined when the URL is not a URL or a path. */
  async preview(siteId: string, visitorId: string, url: string): Promise<DecisionResult | undefined> {
    const { snap, visitor } = await this.inputs(siteId, visitorId);
    const decision = decide(snap, { visitorId, url, segmentIds: new Set(visitor.segmentIds), earlierArms: visitor.earlierArms });
    return decision ? { decision, visitor, snap } : undefined;
  }

  /**
   * Decides and records one exposure per zone decided, in one write.
   *
   * PostgreSQL: a decision is made from the visitor's facts as this instance last knew them (none for a visitor
   * it has not seen), and its exposures are stored by a statement that first checks those facts against the
   * database (ExposuresRepo.insertIfFacts): when they still hold, the decision took one round trip (the facts read
   * and the insert were two); when not, nothing was stored, the statement returned the facts as they are, and the
   * decision is made again from them and stored the same way. Every stored decision was made from the facts
   * its statement found, as when they were read just before. A page with no zone, or a visitor whose profile was
   * merged, reads its facts first (the result names them, and a merged profile's are read past the merge).
   */
  async decideAndRecord(siteId: string, visitorId: string, url: string): Promise<DecisionResult | undefined> {
    if (this.store.sql.dialect !== 'sqlite') return this.decideAndRecordChecked(siteId, visitorId, url);
    const r = await this.preview(siteId, visitorId, url);
    if (!r || r.decision.zones.length === 0) return r;
    await this.record(exposureRows(siteId, visitorId, url, r));
    return r;
  }

  private record(rows: ExposureInsert[]): Promise<void> {
    const d = rows[0]!;
    // Keyed by visitor: decisions of different visitors share their group commit's insert (Store.write);
    // one statement, so on PostgreSQL the inserts of concurrent decisions commit without a transaction around them.
    // On SQLite the decisions of one group transaction are merged: their exposures one statement (insertDecisions).
    const merge: WriteMerge<ExposureInsert[]> = { by: insertDecisions, item: rows };
    return this.store.write((tx) => tx.exposures.insert(rows), { key: `x\u0000${d.siteId}\u0000${d.visitorId}`, ack: 'commit', oneStatement: true, merge });
  }

  private async decideAndRecordChecked(siteId: string, visitorId: string, url: string): Promise<DecisionResult | undefined> {
    const key = `${siteId}\u0000${visitorId}`;
    const known = this.known.get(key);
    let f: KnownFacts;
    let read = false;
    if (known === undefined) f = NO_FACTS;
    else if (known !== null) f = known;
    else {
      const r = await this.readFacts(siteId, visitorId);
      f = { rows: r.rows, visitor: r.visitor };
      read = true;
    }
    for (let tries = 1; ; tries++) {
      const snap = await this.cache.get(this.store, siteId, null);
      const visitor: VisitorFacts = { visitorId, ...f.visitor };
      const decision = decide(snap, { visitorId, url, segmentIds: new Set(visitor.segmentIds), earlierArms: visitor.earlierArms });
      if (!decision) return undefined;
      if (decision.zones.length === 0) {
        if (read) return { decision, visitor, snap };
        // Nothing to store, so nothing checks the facts: read them (the result names them).
        return this.preview(siteId, visitorId, url);
      }
      const r: DecisionResult = { decision, visitor, snap };
      const rows = exposureRows(siteId, visitorId, url, r);
      if (tries > MAX_CHECKED_TRIES) {
        // The facts changed under every try: stored as decided from the ones just read, as without the check.
        await this.record(rows);
        this.remember(key, f.rows, rows);
        return r;
      }
      const now = await this.store.write((tx) => tx.exposures.insertIfFacts(f.rows, rows), {
        key: `x\u0000${key}`,
        ack: 'commit',
        oneStatement: true,
      });
      if (now === null) {
        this.remember(key, f.rows, rows);
        return r;
      }
      // The facts were not those: decide again from the ones the statement read.
      const parsed = factsFromRows(now);
      f = { rows: now, visitor: await this.followMerge(siteId, visitorId, parsed) };
      read = true;
    }
  }

  /**
   * The facts after a stored decision: `rows` and the first arms it stored (a test's first exposure outside the
   * holdout keeps its arm; first_arms keeps the largest profile id, `c`, here compared in code point order: where the
   * database's collation orders two ids otherwise, the next check misses and reads them again; and the earliest time,
   * `n`, an upper bound here).
   */
  private remember(key: string, rows: FactsRow[], stored: readonly ExposureInsert[]): void {
    const next = rows.map((r) => (Number(r.k) === 2 ? { ...r } : r));
    const arms = new Map<string, FactsRow>();
    for (const r of next) if (Number(r.k) === 2) arms.set(r.a!, r);
    for (const e of stored) {
      if (e.experimentId === null || e.armId === null || e.holdout) continue;
      const had = arms.get(e.experimentId);
      if (had === undefined) {
        const row: FactsRow = { k: 2, a: e.experimentId, b: e.armId, c: e.profileId, n: e.at };
        arms.set(e.experimentId, row);
        next.push(row);
      } else {
        if (e.profileId !== null && (had.c === null || e.profileId > had.c)) had.c = e.profileId;
        // An upper bound of first_arms' time (insertIfFacts): the stored one, or this row's after its upsert.
        had.n = had.n === null || had.n === undefined ? e.at : Math.min(Number(had.n), e.at);
      }
    }
    const parsed = factsFromRows(next);
    this.known.delete(key);
    if (this.known.size >= MAX_KNOWN) this.known.delete(this.known.keys().next().value!);
    this.known.set(key, parsed.profileId === undefined ? null : { rows: next, visitor: { profileId: parsed.profileId, segmentIds: parsed.segmentIds, earlierArms: parsed.earlierArms } });
  }
}

/** One exposure row per zone decided. */
function exposureRows(siteId: string, visitorId: string, url: string, r: DecisionResult): ExposureInsert[] {
  const at = Date.now();
  return r.decision.zones.map((z) => ({
    siteId,
    visitorId,
    profileId: r.visitor.profileId,
    zoneId: z.zone_id,
    variantId: z.variant_id,
    experimentId: z.experiment_id,
    armId: z.arm_id,
    holdout: z.holdout,
    url,
    at,
  }));
}

const services = new WeakMap<Store, DecisionService>();

/**
 * The decision service of a store (one per store: it owns the store's decision cache listener).
 * `fallbackMs` (given by `svc serve` from its settings) sets the PostgreSQL reload fallback.
 */
export function decisionService(store: Store, opts: { fallbackMs?: number } = {}): DecisionService {
  let s = services.get(store);
  if (!s) {
    s = new DecisionService(store);
    services.set(store, s);
  }
  if (opts.fallbackMs !== undefined) decisionCache(store).fallbackMs = opts.fallbackMs;
  return s;
}
