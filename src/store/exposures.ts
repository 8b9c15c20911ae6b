import { SqliteSql, type Sql } from './sql.js';
import { orderFreeAppend } from './pg/batch.js';

const INSERT_EXPOSURE =
  'INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/**
 * PostgreSQL: keeps first_arms for the rows of `rows` (a SELECT of site_id, visitor_id, experiment_id, arm_id,
 * created_at, profile_id; exposures outside the holdout to an arm): one row per visitor and test (the first by
 * created_at and arm id, with the largest profile id of its rows), then an upsert that writes only when that row is
 * earlier than the stored one or its profile id larger (a returning visitor's exposure, the common case, writes
 * nothing), as the SQLite trigger (migration 29).
 */
function firstArmsUpsert(rows: string): string {
  return (
    'INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at, profile_id) ' +
    'SELECT DISTINCT ON (site_id, visitor_id, experiment_id) site_id, visitor_id, experiment_id, arm_id, created_at, ' +
    `max(profile_id) OVER (PARTITION BY site_id, visitor_id, experiment_id) FROM (${rows}) fr ORDER BY site_id, visitor_id, experiment_id, created_at, arm_id ` +
    'ON CONFLICT (site_id, visitor_id, experiment_id) DO UPDATE SET ' +
    'arm_id = CASE WHEN (excluded.created_at, excluded.arm_id) < (first_arms.created_at, first_arms.arm_id) THEN excluded.arm_id ELSE first_arms.arm_id END, ' +
    'created_at = least(excluded.created_at, first_arms.created_at), ' +
    'profile_id = CASE WHEN first_arms.profile_id IS NULL OR excluded.profile_id > first_arms.profile_id THEN excluded.profile_id ELSE first_arms.profile_id END ' +
    'WHERE (excluded.created_at, excluded.arm_id) < (first_arms.created_at, first_arms.arm_id) ' +
    'OR (excluded.profile_id IS NOT NULL AND (first_arms.profile_id IS NULL OR excluded.profile_id > first_arms.profile_id))'
  );
}

/**
 * PostgreSQL: the rows as one array per column. A fixed text, so a named statement parsed and planned once
 * per connection however many rows it carries; the concurrent decisions' rows that share a statement
 * (pg/batch.ts, the append shape) are their arrays end to end. A multi-row VALUES text instead is new for
 * every row count: parsed and planned on every execution (measured: backend CPU per decision 37–50 µs
 * with this text against 62–75 µs with VALUES, 8 decisions of 5 rows a statement).
 *
 * The same statement keeps each row's first arm (first_arms: per visitor and test, the exposure outside the holdout
 * first by (created_at, arm_id), and the largest profile id; firstArmsUpsert), so the exposure and its first arm
 * commit or fail together. On SQLite a trigger on exposures does that; on PostgreSQL a row trigger cost about 20 µs
 * of backend CPU per decision more than this CTE (a plpgsql call per row; 0–58 µs in seven runs of
 * test/bench/first-arms-micro-pg.ts, docs/scale.md). The rows of one visitor and test are reduced to one first
 * (PostgreSQL refuses an upsert that meets a row twice in a statement), and the upsert keeps a minimum and a maximum,
 * so concurrent decisions' arrays end to end store what the statements one after another would (orderFreeAppend).
 */
export const INSERT_EXPOSURES_PG = orderFreeAppend(
  'WITH r (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) AS (' +
    'SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::int4[], ?::text[], ?::int8[])), ' +
    'e AS (INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) SELECT * FROM r) ' +
    firstArmsUpsert('SELECT site_id, visitor_id, experiment_id, arm_id, created_at, profile_id FROM r WHERE experiment_id IS NOT NULL AND arm_id IS NOT NULL AND holdout = 0'),
);

/** Rows per multi-row INSERT on SQLite (10 parameters each, far below SQLite's limit; bounds the statement texts cached). */
const MAX_ROWS_PER_INSERT = 64;
const insertTexts: string[] = [];

/**
 * One decision's `n` rows (SQLite): the values they share (site, visitor, profile, URL, time) bound once, then five a row
 * (zone, variant, test, arm, holdout): 5 + 5n parameters instead of 10n, and the URL's text converted once instead of n times.
 * The rows are inserted in the order given (the VALUES co-routine yields them in order).
 */
const oneDecisionTexts: string[] = [];
function oneDecisionRows(n: number): string {
  return (oneDecisionTexts[n] ??=
    'INSERT INTO exposures (site_id, visitor_id, profile_id, url, created_at, zone_id, variant_id, experiment_id, arm_id, holdout) ' +
    `SELECT ?, ?, ?, ?, ?, column1, column2, column3, column4, column5 FROM (VALUES (?, ?, ?, ?, ?)${', (?, ?, ?, ?, ?)'.repeat(n - 1)})`);
}

/** At most this many decisions, and rows, in one statement of many decisions (decisionsRows; bounds the texts cached). */
const MAX_DECISIONS_PER_INSERT = 32;
const MAX_ROWS_PER_DECISIONS_INSERT = 256;
const decisionsTexts = new Map<number, string>();

/**
 * `d` decisions of `n` rows each in one statement (SQLite): oneDecisionRows's SELECT once per decision, joined by
 * UNION ALL, which yields its terms in order, so the rows are inserted in the order given, decision after
 * decision, as `d` statements would insert them (and the first_arm trigger, row by row, keeps the first arm of the
 * first). One statement's fixed costs instead of `d`.
 *
 * `orFail`: `INSERT OR FAIL`, which needs no statement journal. SQLite opens one for a statement that writes more
 * than one row (or fires a trigger) and may abort (the NOT NULL columns, ABORT by default), so that an abort can
 * undo the statement's own rows, and copies into it every page the statement changes: ~35k instructions a decision
 * (test/bench/decide-handler.ts, callgrind). Under OR FAIL a failing row leaves the statement's earlier rows in
 * place, so it is only for a statement inside a transaction that is rolled back (or rolled back to its savepoint)
 * when the statement fails: the writer's group (GroupCommitWriter.runBatch rolls the group back, then runs each
 * decision alone). The first_arm trigger ignores a known visitor and test by an upsert (migration 28), which an
 * outer OR FAIL does not override as it did the INSERT OR IGNORE before.
 */
function decisionsRows(n: number, d: number, orFail: boolean): string {
  const key = (n * 64 + d) * 2 + (orFail ? 1 : 0);
  let text = decisionsTexts.get(key);
  if (text === undefined) {
    const one = `SELECT ?, ?, ?, ?, ?, column1, column2, column3, column4, column5 FROM (VALUES (?, ?, ?, ?, ?)${', (?, ?, ?, ?, ?)'.repeat(n - 1)})`;
    text =
      `INSERT ${orFail ? 'OR FAIL ' : ''}INTO exposures (site_id, visitor_id, profile_id, url, created_at, zone_id, variant_id, experiment_id, arm_id, holdout) ` +
      Array.from({ length: d }, () => one).join(' UNION ALL ');
    decisionsTexts.set(key, text);
  }
  return text;
}

/** Whether `rows` (one decision's, non-empty) can take oneDecisionRows's form: shared values equal, not too many rows. */
function oneDecisionForm(rows: readonly ExposureInsert[]): boolean {
  const d = rows[0]!;
  return rows.length <= MAX_ROWS_PER_INSERT && rows.every((r) => r.siteId === d.siteId && r.visitorId === d.visitorId && r.profileId === d.profileId && r.url === d.url && r.at === d.at);
}

/** INSERT_EXPOSURE with `n` rows of values. */
function insertRows(n: number): string {
  return (insertTexts[n] ??= `${INSERT_EXPOSURE}${', (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'.repeat(n - 1)}`);
}

export interface ExposureInsert {
  siteId: string;
  visitorId: string;
  profileId: string | null;
  zoneId: string;
  variantId: string | null;
  experimentId: string | null;
  armId: string | null;
  holdout: boolean;
  url: string;
  at: number;
}

/**
 * What one decision reads about a visitor, in one statement (one round trip on PostgreSQL):
 * kind 0, SQLite only: the site's configuration version (`n`; no row before the first change);
 * kind 1: the visitor identity's profile (`a`), that profile's row id (`c`, null when it is gone)
 * and what it was merged into (`b`); kind 2: the first arm the visitor saw in a test (`a` experiment,
 * `b` arm; first_arms, one row per test, kept by a trigger on exposures, so the read does not grow with
 * the visitor's history); kind 3: a segment (`a`) of the identity's profile when that profile is not merged.
 *
 * SQLite (FACTS_SQLITE): one value, a JSON text `[version, profile, merged_into, profile row id, [segment…],
 * [[experiment, arm]…]]` (null for a missing version or identity), which factsRowsSqlite turns into the rows above,
 * in the order the rows of kinds 0 to 3 came before (one UNION ALL branch a kind). better-sqlite3 builds a row as
 * an array with one Object::Set a column (~1,000 instructions each under callgrind): the rows of kinds 0 to 3, five
 * columns each, cost more than the read's b-tree descents. The site and the visitor are bound once each by name
 * (`@s`, `@v`; better-sqlite3 refuses `?NNN`), where seven positional parameters were each a UTF-8 conversion and
 * copy, and the identity is looked up once (the segments' branch looked it and its profile up again). JSON
 * escapes every string (json_quote, json_group_array), so any id reads back as stored.
 */
const FACTS_SQLITE = `SELECT '[' || coalesce((SELECT version FROM web_versions WHERE site_id = @s), 'null')
 || ',' || json_quote(i.profile_id) || ',' || json_quote(p.merged_into) || ',' || json_quote(p.id)
 || ',' || (SELECT json_group_array(m.segment_id) FROM segment_members m WHERE m.profile_id = p.id AND p.merged_into IS NULL)
 || ',' || (SELECT json_group_array(json_array(f.experiment_id, f.arm_id)) FROM first_arms f WHERE f.site_id = @s AND f.visitor_id = @v) || ']'
FROM (SELECT 1) AS one
  LEFT JOIN identities i ON i.site_id = @s AND i.kind = 'visitor' AND i.value = @v
  LEFT JOIN profiles p ON p.id = i.profile_id AND p.site_id = i.site_id`;

/** FACTS_SQLITE's value as the rows of kinds 0 to 3, in that order. */
function factsRowsSqlite(text: string): FactsRow[] {
  const [version, profileId, mergedInto, rowId, segments, arms] = JSON.parse(text) as [
    number | null,
    string | null,
    string | null,
    string | null,
    string[],
    [string, string][],
  ];
  const rows: FactsRow[] = [];
  if (version !== null) rows.push({ k: 0, a: null, b: null, c: null, n: version });
  // identities.profile_id is NOT NULL: null is no identity.
  if (profileId !== null) rows.push({ k: 1, a: profileId, b: mergedInto, c: rowId, n: null });
  for (const [experimentId, armId] of arms) rows.push({ k: 2, a: experimentId, b: armId, c: null, n: null });
  for (const segmentId of segments) rows.push({ k: 3, a: segmentId, b: null, c: null, n: null });
  return rows;
}

/**
 * What one visitor's identity says (kinds 1 and 3 of FACTS_SQLITE), PostgreSQL: the identity and its
 * profile looked up once, the segments joined to that lookup (LATERAL). `q.s`, `q.v`: the site and the visitor.
 */
const IDENTITY_FACTS_PG = `SELECT x.k, x.a, x.b, x.c, NULL::bigint AS n FROM identities i
  LEFT JOIN profiles p ON p.id = i.profile_id AND p.site_id = i.site_id
  CROSS JOIN LATERAL (
    SELECT 1 AS k, i.profile_id AS a, p.merged_into AS b, p.id AS c
    UNION ALL
    SELECT 3, m.segment_id, NULL, NULL FROM segment_members m WHERE p.id IS NOT NULL AND p.merged_into IS NULL AND m.profile_id = p.id) x
 WHERE i.site_id = q.s AND i.kind = 'visitor' AND i.value = q.v
UNION ALL
SELECT 2, f.experiment_id, f.arm_id, f.profile_id, f.created_at FROM first_arms f WHERE f.site_id = q.s AND f.visitor_id = q.v`;

/** The visitor's rows of FACTS_SQLITE (kinds 1 to 3) on PostgreSQL (IDENTITY_FACTS_PG), for one visitor. */
const FACTS_VISITOR_PG = `SELECT f.k, f.a, f.b, f.c, f.n FROM (SELECT ?::text AS s, ?::text AS v) AS q CROSS JOIN LATERAL (
${IDENTITY_FACTS_PG}) f`;

/**
 * FACTS_VISITOR_PG for many visitors at once (PostgreSQL): the (site, visitor) pairs come as one JSON
 * array of `{"o": position, "s": site, "v": visitor}`, and every row carries `o`, the 1-based position
 * of the pair it answers. A fixed text, so it is a named statement prepared once per connection; and
 * planned once too: the pairs are a json_to_recordset, whose row estimate (100) is the same whatever the
 * parameter, so PostgreSQL's plan cache settles on the generic plan after its first five executions
 * (pg_prepared_statements: generic_plans). With the pairs as `unnest` of text arrays instead, each
 * execution's custom plan knew the array length, looked cheaper than the generic plan and was chosen
 * every time: about 0.4 ms of planning per execution (measured, custom_plans only).
 */
const FACTS_MANY_PG = `SELECT q.o, f.k, f.a, f.b, f.c, f.n FROM json_to_recordset(?::json) AS q(o int, s text, v text) CROSS JOIN LATERAL (
${IDENTITY_FACTS_PG}) f`;

/**
 * A decision's exposures stored only if the visitor's facts are still those it was decided from (PostgreSQL):
 * one statement that reads the facts (IDENTITY_FACTS_PG), compares them with the ones the caller gives (`x`, the
 * rows of kinds 1 to 3 rendered by renderFacts), inserts the rows (`z`, the zones as JSON; the exposures and their first
 * arms, as INSERT_EXPOSURES_PG, a first arm only for a zone flagged `f`: svc flags a row to a test whose first arm the
 * expected facts do not hold, since where the check holds first_arms has a row for each test they hold, and inserting it
 * again would only be an index probe that conflicts) where they are equal, and returns the facts read where they are not (`got`: a JSON
 * array of [k, a, b, c]; one row per such decision, none for a decision stored). One decision per position of
 * the arrays; concurrent decisions' arrays are joined end to end (pg/batch.ts, a tagged append: each returned row
 * names its decision by `svc_i`). A decision's facts from an in-process cache (DecisionService) then cost no
 * statement of their own: one round trip, committed on its own, where a read and then the insert took two.
 * The expected facts come rendered as PostgreSQL renders the facts it reads (renderFacts: json_agg of json_build_array
 * in code point order), so where they hold the comparison is of two texts; where the texts differ, the expected facts
 * are parsed, ordered and rendered by PostgreSQL and compared again, so a rendering of svc's that is not
 * PostgreSQL's (say, a string escaped otherwise) costs a parse, never a wrong answer. Each array is unnested from a
 * sub-select, `unnest((SELECT ?::text[]))`, not from the parameter itself: PostgreSQL estimates an unnest of a known
 * array by its length, so with `unnest(?::text[])` every execution's custom plan looked cheaper than the generic one
 * and the statement was planned every time (1.1 ms; measured: custom_plans only). Through the sub-select (an InitPlan)
 * the planner does not see the array, the estimate is fixed, and the plan cache settles on the generic plan. (The
 * arrays were read as JSON before, json_array_elements_text(array_to_json(…)), for the same fixed estimate: each
 * array parsed, rendered as JSON and parsed again; this form saved 5–8 µs of backend CPU a decision,
 * docs/scale.md.) `OFFSET 0` keeps the facts read a subquery of its own: pulled up, it was run once for each of its
 * two uses.
 */
export const INSERT_EXPOSURES_IF_FACTS_PG =
  'WITH q (s, v, p, u, t, x, z, svc_i) AS (SELECT * FROM ROWS FROM (' +
  Array.from({ length: 7 }, () => 'unnest((SELECT ?::text[]))').join(', ') +
  ') WITH ORDINALITY), ' +
  'g AS MATERIALIZED (SELECT f.*, CASE WHEN f.x = f.got THEN f.got ELSE (SELECT coalesce(json_agg(json_build_array(w.k, w.a, w.b, w.c) ' +
  'ORDER BY w.k, w.a COLLATE "C", w.b COLLATE "C", w.c COLLATE "C"), \'[]\')::text FROM (SELECT (j->>0)::int AS k, j->>1 AS a, j->>2 AS b, j->>3 AS c ' +
  'FROM json_array_elements(f.x::json) j) w) END AS want FROM (SELECT q.s, q.v, q.p, q.u, q.t::int8 AS t, q.x, q.z, q.svc_i, ' +
  `(SELECT coalesce(json_agg(json_build_array(h.k, h.a, h.b, h.c) ORDER BY h.k, h.a COLLATE "C", h.b COLLATE "C", h.c COLLATE "C"), '[]')::text FROM (${IDENTITY_FACTS_PG}) h) AS got ` +
  'FROM q OFFSET 0) f), ' +
  'r AS (SELECT g.s, g.v, g.p, y.zone_id, y.variant_id, y.experiment_id, y.arm_id, y.holdout, g.u, g.t, y.f FROM g ' +
  'CROSS JOIN LATERAL json_to_recordset(g.z::json) AS y(zone_id text, variant_id text, experiment_id text, arm_id text, holdout int, f int) WHERE g.got = g.want), ' +
  'e AS (INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) ' +
  'SELECT s, v, p, zone_id, variant_id, experiment_id, arm_id, holdout, u, t FROM r), ' +
  `a AS (${firstArmsUpsert('SELECT s AS site_id, v AS visitor_id, experiment_id, arm_id, t AS created_at, p AS profile_id FROM r WHERE f = 1 AND experiment_id IS NOT NULL AND arm_id IS NOT NULL AND holdout = 0')}) ` +
  'SELECT svc_i, got FROM g WHERE got <> want';

/** At most this many visitors in one FACTS_MANY_PG statement. */
const MAX_FACTS_BATCH = 256;

/** A row of the facts read (FACTS_SQLITE, FACTS_VISITOR_PG): `k` the kind, `n` SQLite's configuration version (kind 0). */
export type FactsRow = { k: number | string; a: string | null; b: string | null; c: string | null; n?: number | string | null };

interface FactsAsk {
  siteId: string;
  visitorId: string;
  resolve: (rows: FactsRow[]) => void;
  reject: (err: unknown) => void;
}

/**
 * Concurrent decisions' reads on PostgreSQL as one statement: the asks made in one turn of the event
 * loop (the requests parsed together) go out together when the turn ends, one round trip on one pooled
 * connection instead of one each. A lone ask runs FACTS_VISITOR_PG. When the shared statement
 * fails, every ask runs again alone, so an error (a value PostgreSQL refuses) reaches only its own caller.
 */
class FactsBatcher {
  private asks: FactsAsk[] = [];

  constructor(private readonly x: Sql) {}

  rows(siteId: string, visitorId: string): Promise<FactsRow[]> {
    return new Promise((resolve, reject) => {
      if (this.asks.push({ siteId, visitorId, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const asks = this.asks;
    this.asks = [];
    for (let i = 0; i < asks.length; i += MAX_FACTS_BATCH) void this.send(asks.slice(i, i + MAX_FACTS_BATCH));
  }

  /** FACTS_VISITOR_PG for one visitor. */
  private one(siteId: string, visitorId: string): Promise<FactsRow[]> {
    return this.x.all<FactsRow>(FACTS_VISITOR_PG, [siteId, visitorId]);
  }

  private alone(a: FactsAsk): Promise<void> {
    return this.one(a.siteId, a.visitorId).then(a.resolve, a.reject);
  }

  private async send(asks: FactsAsk[]): Promise<void> {
    if (asks.length === 1) return this.alone(asks[0]!);
    // One position per distinct pair; asks for the same visitor share it.
    const at = new Map<string, number>();
    const pairs: { o: number; s: string; v: string }[] = [];
    const slot = asks.map((a) => {
      const key = `${a.siteId}\u0000${a.visitorId}`;
      let i = at.get(key);
      if (i === undefined) {
        i = pairs.push({ o: pairs.length + 1, s: a.siteId, v: a.visitorId }) - 1;
        at.set(key, i);
      }
      return i;
    });
    if (pairs.length === 1) {
      await this.one(pairs[0]!.s, pairs[0]!.v).then(
        (r) => asks.forEach((a) => a.resolve(r.map((row) => ({ ...row })))),
        (err: unknown) => asks.forEach((a) => a.reject(err)),
      );
      return;
    }
    let rows: (FactsRow & { o: number | string })[];
    try {
      rows = await this.x.all(FACTS_MANY_PG, [JSON.stringify(pairs)]);
    } catch {
      await Promise.all(asks.map((a) => this.alone(a)));
      return;
    }
    const per: FactsRow[][] = pairs.map(() => []);
    for (const r of rows) per[Number(r.o) - 1]!.push(r);
    asks.forEach((a, i) => a.resolve(per[slot[i]!]!));
  }
}

/** One batcher per PostgreSQL executor (the store's pool executor lives as long as the store). */
const factsBatchers = new WeakMap<Sql, FactsBatcher>();

/** A visitor as one decision sees it (ExposuresRepo.decisionFacts). */
export interface DecisionFacts {
  /** SQLite: the site's configuration version (0 before the first change); PostgreSQL: null (notifications keep the cache). */
  version: number | null;
  /**
   * The profile the visitor identity names, when it is not merged into another (`segmentIds` are then its segments);
   * undefined when the identity names a merged profile: the caller follows the merge (VisitorsRepo.profileOf).
   */
  profileId: string | null | undefined;
  segmentIds: string[];
  /** The first arm the visitor was exposed to in each test. */
  earlierArms: Map<string, string>;
}

/**
 * Facts rows as the checked exposure statement renders what it reads: `json_agg(json_build_array(k, a, b, c) ORDER BY
 * k, a, b, c)` with the strings in code point order (COLLATE "C"; UTF-16 order is the same but for characters past
 * U+FFFF against U+E000–U+FFFF, where the statement then parses them instead) and NULL last; ", " between items.
 */
export function renderFacts(rows: readonly FactsRow[]): string {
  const cmp = (x: string | null, y: string | null) => (x === y ? 0 : x === null ? 1 : y === null ? -1 : x < y ? -1 : 1);
  const sorted = rows.map((r) => ({ k: Number(r.k), a: r.a, b: r.b, c: r.c })).sort((x, y) => x.k - y.k || cmp(x.a, y.a) || cmp(x.b, y.b) || cmp(x.c, y.c));
  return `[${sorted.map((r) => `[${r.k}, ${JSON.stringify(r.a)}, ${JSON.stringify(r.b)}, ${JSON.stringify(r.c)}]`).join(', ')}]`;
}

/** The rows of kinds 1 to 3 (the visitor's; kind 0 is the site's), as {k, a, b, c} with `k` a number. */
function visitorRows(rows: readonly FactsRow[]): FactsRow[] {
  const out: FactsRow[] = [];
  for (const r of rows) {
    const k = Number(r.k);
    // Kind 2's time (n, PostgreSQL) stays: insertIfFacts reads it.
    if (k === 2 && r.n !== null && r.n !== undefined) out.push({ k, a: r.a, b: r.b, c: r.c, n: r.n });
    else if (k !== 0) out.push({ k, a: r.a, b: r.b, c: r.c });
  }
  return out;
}

/** DecisionFacts from the rows of the facts read (`version`: when no kind 0 row says otherwise). */
export function factsFromRows(rows: readonly FactsRow[], version: number | null = null): DecisionFacts {
  let profileId: string | null | undefined = null;
  const segmentIds: string[] = [];
  const earlierArms = new Map<string, string>();
  for (const r of rows) {
    switch (Number(r.k)) {
      case 0:
        version = Number(r.n);
        break;
      case 1:
        // No profile row: none (as profileOf); merged: the caller follows the merge.
        profileId = r.c === null ? null : r.b === null ? r.a : undefined;
        break;
      case 2:
        earlierArms.set(r.a!, r.b!);
        break;
      default:
        segmentIds.push(r.a!);
    }
  }
  return { version, profileId, segmentIds: profileId === undefined ? [] : segmentIds, earlierArms };
}

/** Exposures: what each decided zone showed a visitor, and the arm a visitor keeps. */
export class ExposuresRepo {
  constructor(private readonly x: Sql) {}

  /**
   * The first arm a visitor was exposed to in each experiment (a visitor keeps its arm): first_arms, whose
   * row for a visitor and test the trigger on exposures writes with the first exposure to an arm of it.
   */
  async earlierArms(siteId: string, visitorId: string): Promise<Map<string, string>> {
    const rows = await this.x.all<{ experiment_id: string; arm_id: string }>('SELECT experiment_id, arm_id FROM first_arms WHERE site_id = ? AND visitor_id = ?', [
      siteId,
      visitorId,
    ]);
    const out = new Map<string, string>();
    for (const r of rows) out.set(r.experiment_id, r.arm_id);
    return out;
  }

  /**
   * Everything a decision reads about a visitor in one statement (on PostgreSQL, one shared by the
   * decisions asked in the same turn of the event loop, FactsBatcher): the site's configuration
   * version (SQLite), the visitor's profile and segments (VisitorsRepo.profileOf and
   * segmentsOfProfile when the profile is not merged) and its earlier arms (earlierArms).
   */
  async decisionFacts(siteId: string, visitorId: string): Promise<DecisionFacts> {
    return (await this.decisionFactsRead(siteId, visitorId)).facts;
  }

  /** decisionFacts, and the rows of kinds 1 to 3 they come from (what insertIfFacts compares). */
  async decisionFactsRead(siteId: string, visitorId: string): Promise<{ facts: DecisionFacts; rows: FactsRow[] }> {
    const sqlite = this.x instanceof SqliteSql;
    let rows: FactsRow[];
    if (sqlite) {
      rows = factsRowsSqlite((this.x as SqliteSql).getValue(FACTS_SQLITE, [{ s: siteId, v: visitorId }]) as string);
    } else {
      let batcher = factsBatchers.get(this.x);
      if (batcher === undefined) factsBatchers.set(this.x, (batcher = new FactsBatcher(this.x)));
      rows = await batcher.rows(siteId, visitorId);
    }
    return { facts: factsFromRows(rows, sqlite ? 0 : null), rows: visitorRows(rows) };
  }

  /**
   * PostgreSQL: stores one decision's exposures (as `insert`, in one statement) if the visitor's facts are still
   * `expected` (the rows of kinds 1 to 3 the decision was made from, as decisionFactsRead gives them), and returns null;
   * else stores nothing and returns the facts as they are (the same kinds), for the decision to be made again.
   * The rows are one decision's: one site, visitor, profile, URL and time.
   */
  async insertIfFacts(expected: readonly FactsRow[], rows: readonly ExposureInsert[]): Promise<FactsRow[] | null> {
    const d = rows[0]!;
    // The tests whose first arm the expected facts hold, with first_arms' profile id (`c`, compared by the check) and time
    // (`n`, not compared: first_arms' time only falls, so a time read earlier, or a row's time after its upsert, is an
    // upper bound): where the check holds, first_arms has those rows (the statement just read them), so an upsert of a
    // row with that profile id (or none) and a later time would write nothing; flagged `f: 0`, the statement does not
    // try it (every returning visitor's decision). A row with another profile id (first_arms keeps the largest, compared
    // by PostgreSQL), an earlier time, or a test whose time is not known is tried.
    let known: Map<string, FactsRow> | undefined;
    for (const r of expected) if (Number(r.k) === 2) (known ??= new Map()).set(r.a!, r);
    const tried = (r: ExposureInsert): boolean => {
      if (r.experimentId === null || r.armId === null || r.holdout) return false;
      const k = known?.get(r.experimentId);
      return k === undefined || (r.profileId !== null && r.profileId !== k.c) || k.n === null || k.n === undefined || r.at < Number(k.n);
    };
    const got = await this.x.all<{ got: string }>(INSERT_EXPOSURES_IF_FACTS_PG, [
      [d.siteId],
      [d.visitorId],
      [d.profileId],
      [d.url],
      [d.at],
      [renderFacts(expected)],
      [
        JSON.stringify(
          rows.map((r) => ({
            zone_id: r.zoneId,
            variant_id: r.variantId,
            experiment_id: r.experimentId,
            arm_id: r.armId,
            holdout: r.holdout ? 1 : 0,
            f: tried(r) ? 1 : 0,
          })),
        ),
      ],
    ]);
    if (got.length === 0) return null;
    return (JSON.parse(got[0]!.got) as [number, string | null, string | null, string | null][]).map(([k, a, b, c]) => ({ k, a, b, c }));
  }


  /**
   * The exposures of several decisions (each `insert`'s rows), in the order given: what the writer calls for the
   * decisions of one group transaction (WriteOptions.merge). SQLite: consecutive decisions with the same number of
   * rows go as one statement (decisionsRows), up to 32 decisions and 256 rows, a lone decision too inside a
   * transaction (for OR FAIL); a decision of another form (rows that do not share their site, visitor, profile, URL
   * and time, or more than 64) goes alone as `insert`.
   * PostgreSQL: each decision as `insert`. Inside a transaction the statement is OR FAIL (no statement journal,
   * decisionsRows): when it fails, rows of it before the failing one stay until the caller rolls back, which the
   * writer does (the group, then each decision alone in its savepoint, its own `insert`), so only the faulty one
   * fails and nothing of it is stored. A caller other than the writer must roll back when this throws.
   */
  async insertDecisions(decisions: readonly (readonly ExposureInsert[])[]): Promise<void> {
    if (this.x.dialect !== 'sqlite') {
      for (const rows of decisions) await this.insert(rows);
      return;
    }
    // OR FAIL only inside a transaction (the writer's group, rolled back when an operation fails): in autocommit
    // the rows before a failing one would stay.
    const orFail = this.x instanceof SqliteSql && this.x.db.inTransaction;
    for (let i = 0; i < decisions.length; ) {
      const first = decisions[i]!;
      const n = first.length;
      let j = i + 1;
      if (n > 0 && oneDecisionForm(first)) {
        const most = Math.min(MAX_DECISIONS_PER_INSERT, Math.floor(MAX_ROWS_PER_DECISIONS_INSERT / n));
        while (j < decisions.length && j - i < most && decisions[j]!.length === n && oneDecisionForm(decisions[j]!)) j++;
      }
      if (j - i === 1 && !(orFail && n > 0 && oneDecisionForm(first))) {
        await this.insert(first);
        i++;
        continue;
      }
      const count = j - i;
      const params: unknown[] = [];
      for (; i < j; i++) {
        const rows = decisions[i]!;
        const d = rows[0]!;
        params.push(d.siteId, d.visitorId, d.profileId, d.url, d.at);
        for (const r of rows) params.push(r.zoneId, r.variantId, r.experimentId, r.armId, r.holdout ? 1 : 0);
      }
      await this.x.run(decisionsRows(n, count, orFail), params);
    }
  }

  /**
   * Writes one row per zone a request decided, in one statement. On PostgreSQL the rows go as
   * column arrays (INSERT_EXPOSURES_PG), and the rows of concurrent decisions share one such statement
   * (pg/batch.ts); on SQLite the request's rows are one multi-row INSERT (one call into SQLite instead
   * of one per row).
   */
  async insert(rows: readonly ExposureInsert[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.x.dialect !== 'sqlite') {
      await this.x.run(INSERT_EXPOSURES_PG, [
        rows.map((r) => r.siteId),
        rows.map((r) => r.visitorId),
        rows.map((r) => r.profileId),
        rows.map((r) => r.zoneId),
        rows.map((r) => r.variantId),
        rows.map((r) => r.experimentId),
        rows.map((r) => r.armId),
        rows.map((r) => (r.holdout ? 1 : 0)),
        rows.map((r) => r.url),
        rows.map((r) => r.at),
      ]);
      return;
    }
    const d = rows[0]!;
    if (rows.length > 1 && oneDecisionForm(rows)) {
      const params: unknown[] = [d.siteId, d.visitorId, d.profileId, d.url, d.at];
      for (const r of rows) params.push(r.zoneId, r.variantId, r.experimentId, r.armId, r.holdout ? 1 : 0);
      await this.x.run(oneDecisionRows(rows.length), params);
      return;
    }
    const sets = rows.map((r) => [r.siteId, r.visitorId, r.profileId, r.zoneId, r.variantId, r.experimentId, r.armId, r.holdout ? 1 : 0, r.url, r.at]);
    if (rows.length === 1) {
      await this.x.runEach(INSERT_EXPOSURE, sets);
      return;
    }
    for (let i = 0; i < sets.length; i += MAX_ROWS_PER_INSERT) {
      const chunk = sets.slice(i, i + MAX_ROWS_PER_INSERT);
      await this.x.run(insertRows(chunk.length), chunk.flat());
    }
  }
}
