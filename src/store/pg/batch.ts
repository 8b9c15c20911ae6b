import type pg from 'pg';
import type { Params, RunResult, Sql } from '../sql.js';
import { noteColumns, resultColumns } from './columns.js';
import { statementName } from './names.js';

/**
 * Set-based execution of the statements of concurrent operations inside one
 * PostgreSQL group transaction (PgWriteRunner). Operations that may run
 * concurrently (keyed write operations) each still ask for one statement at a
 * time; this executor holds what they ask for until every operation has either
 * finished or is waiting for a statement (the next turn of the event loop),
 * then sends that "wave" with one statement per SQL text:
 *
 * - reads (`SELECT …`) of one text: identical parameters are asked once; the
 *   distinct parameter sets run as one statement, the original query joined
 *   LATERAL to `unnest` arrays of the parameters, rows tagged with the ordinal
 *   of the set that asked for them;
 * - `INSERT … VALUES (…)` of one text: one `INSERT … SELECT … FROM ROWS FROM
 *   (json_array_elements_text($1::json), …)`, a JSON array per parameter (or a text column's
 *   values joined by U+001E, split by string_to_table), whose text does not depend
 *   on the number of rows, so it is a named statement, planned once per connection (multi-row VALUES
 *   where the parameters cannot be typed; `RETURNING` rows come back in row order); an upsert
 *   (`ON CONFLICT (…) DO UPDATE`) whose rows share a conflict key is split in
 *   rounds, at most one row per key in each, so a key is never touched twice
 *   by one statement ("cannot affect row a second time");
 * - `UPDATE … SET … WHERE …` of one text: one `UPDATE … FROM unnest(…)`, in
 *   rounds when two rows share the WHERE parameters (the later one wins, as
 *   one after another would);
 * - `INSERT INTO t (cols) SELECT * FROM unnest(?::type[], …)` of one text (rows already given as
 *   arrays, no RETURNING or ON CONFLICT), or `WITH r (cols) AS (SELECT * FROM unnest(?::type[], …)), …
 *   INSERT …` whose inserts read those rows (the parameters all in the unnest; ON CONFLICT DO NOTHING at
 *   most, at the end): the sets' arrays concatenated, sent as the same text, so a
 *   fixed-text named statement parsed and planned once per connection whatever the number of rows;
 *   likewise `WITH q (cols, svc_i) AS (SELECT * FROM ROWS FROM (unnest((SELECT ?::type[])), …)
 *   WITH ORDINALITY), …` whose sets stand alone, with the rows it returns handed back to the set their
 *   `svc_i` names (the checked exposure insert of a decision, ExposuresRepo.insertIfFacts);
 * - anything else, or a text whose rewrite PostgreSQL refused once, as sent;
 * - and a wave whose texts are all reads and inserts (plain, or DO NOTHING), as one statement
 *   (`WITH c1 AS (…), c2 AS (…) SELECT …`, see combine), named when all its parts' texts are fixed.
 *
 * The `unnest` reads and updates are named statements as well (their texts depend on the parameter
 * types only).
 *
 * Every caller of a wave hears its answer only when the whole wave is back,
 * so the operations' next statements form the next wave together: the round
 * trips of a group are (waves × statement texts per wave, or one per combined
 * wave), whatever the number of operations in it. Statements whose rows nobody needs (the outbox,
 * the events, counters) are still sent in their wave: an operation awaits each
 * statement, so deferring them further would not shorten the waves.
 */

interface Pending {
  sql: string;
  params: Params;
  kind: 'get' | 'all' | 'run';
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /**
   * Set once the statement that carried it came back (settle, fail): 0 not yet, 1 `rows` and `changes`, 2 `error`.
   * Fields of the item itself rather than an outcome object per item (a wave's items are most of its objects).
   */
  state: 0 | 1 | 2;
  rows: Record<string, unknown>[];
  changes: number;
  error: unknown;
}

const NO_ROWS: Record<string, unknown>[] = [];

/** The item's statement came back with `rows` (what a get or all resolves with) and `changes`. */
function settle(p: Pending, rows: Record<string, unknown>[], changes: number): void {
  p.state = 1;
  p.rows = rows;
  p.changes = changes;
}

/** The item's statement failed with `error` (unless it came back already: `ifOpen`). */
function fail(p: Pending, error: unknown, ifOpen = false): void {
  if (ifOpen && p.state !== 0) return;
  p.state = 2;
  p.error = error;
}

/** At most this many parameters in one statement (PostgreSQL's wire limit is 65,535). */
const MAX_PARAMS = 60_000;
/** At most this many rows of one wave in one rewritten statement. */
const MAX_ROWS = 1_000;

/** Texts PostgreSQL refused in their rewritten form (a parameter type unnest cannot carry): sent as they are from then on. */
const unbatchable = new Set<string>();
/** INSERT texts PostgreSQL refused in their unnest form: sent as one multi-row VALUES statement from then on. */
const noUnnest = new Set<string>();
/** Errors of refused unnest forms (the text goes on as VALUES, not one by one). */
const unnestRefusals = new WeakSet<object>();

/**
 * The column types (format_type) of svc's tables, read once when a store opens (loadColumnTypes): the
 * unnest form of an INSERT types the array of a parameter that fills a column alone with the column's
 * type, as VALUES would (a text array into a BIGINT column would be refused).
 */
const tableTypes = new Map<string, Map<string, string>>();

/** Reads the column types of the tables in the connection's schema (see tableTypes); tables of the same name seen before are replaced. */
export async function loadColumnTypes(q: pg.Pool | pg.PoolClient): Promise<void> {
  const r = await q.query<{ t: string; c: string; ty: string }>(
    `SELECT c.relname AS t, a.attname AS c, format_type(a.atttypid, NULL) AS ty FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped`,
  );
  const seen = new Map<string, Map<string, string>>();
  for (const row of r.rows) {
    let cols = seen.get(row.t);
    if (cols === undefined) seen.set(row.t, (cols = new Map()));
    cols.set(row.c, row.ty);
  }
  for (const [t, cols] of seen) tableTypes.set(t, cols);
}

/** SQLSTATE classes that say the rewrite, not the data, was wrong: syntax, types, feature, cardinality. */
function rewriteRefused(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('42') || code.startsWith('0A') || code === '21000' || code === '22P02');
}

export class BatchPgSql implements Sql {
  readonly dialect = 'pg' as const;
  private queue: Pending[] = [];
  private scheduled = false;
  /** Waves sent, statements sent, statements asked, and waves sent as one combined statement (for tests and the group-commit figures). */
  readonly stats = { waves: 0, statements: 0, asked: 0, combined: 0 };

  /**
   * `client`: a transaction's connection (a group commit), or the pool for one getEach/runEach of PgSql;
   * `plain`: the executor on the same connection, for statements sent as they are (named, prepared once).
   */
  constructor(
    private readonly client: pg.PoolClient | pg.Pool,
    private readonly plain: Sql,
  ) {}

  get<T>(sql: string, params: Params = []): Promise<T | undefined> {
    return this.enqueue(sql, params, 'get') as Promise<T | undefined>;
  }

  all<T>(sql: string, params: Params = []): Promise<T[]> {
    return this.enqueue(sql, params, 'all') as Promise<T[]>;
  }

  run(sql: string, params: Params = []): Promise<RunResult> {
    return this.enqueue(sql, params, 'run') as Promise<RunResult>;
  }

  /** Every set joins the same wave: one statement for all of them. */
  getEach<T>(sql: string, sets: readonly Params[]): Promise<(T | undefined)[]> {
    return Promise.all(sets.map((params) => this.get<T>(sql, params)));
  }

  runEach(sql: string, sets: readonly Params[]): Promise<RunResult[]> {
    return Promise.all(sets.map((params) => this.run(sql, params)));
  }

  private enqueue(sql: string, params: Params, kind: Pending['kind']): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ sql, params, kind, resolve, reject, state: 0, rows: NO_ROWS, changes: 0, error: undefined });
      this.stats.asked++;
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const wave = this.queue;
    this.queue = [];
    if (wave.length === 0) return;
    this.stats.waves++;
    const byText = new Map<string, Pending[]>();
    for (const p of wave) {
      const list = byText.get(p.sql);
      if (list === undefined) byText.set(p.sql, [p]);
      else list.push(p);
    }
    // One statement for the whole wave where its texts allow (combine), else one statement at a time
    // on the connection (a connection answers in order anyway); the callers hear their answers together
    // once all are back.
    if (byText.size < 2 || !(await this.combine(byText))) for (const [sql, items] of byText) await this.send(sql, items);
    for (const p of wave) {
      if (p.state === 2) p.reject(p.error);
      else if (p.state === 0) p.reject(new Error('a batched statement was not answered'));
      else if (p.kind === 'run') p.resolve({ changes: p.changes });
      else if (p.kind === 'get') p.resolve(p.rows[0]);
      else p.resolve(p.rows);
    }
  }

  /** One text's statements of a wave; never rejects (outcomes are set on the items). */
  private async send(sql: string, items: Pending[]): Promise<void> {
    // An append goes its own way even alone: its text arrays in binary form (see append). Other texts alone are sent as they are.
    let shape = unbatchable.has(sql) || (items.length === 1 && !sql.includes('unnest(')) ? null : shapeOf(sql);
    if (items.length === 1 && shape?.kind !== 'append') shape = null;
    try {
      if (shape === null) return await this.oneByOne(items);
      if (shape.kind === 'select') return await this.select(sql, shape, items);
      if (shape.kind === 'insert') return await this.insert(sql, shape, items);
      if (shape.kind === 'append') return await this.append(sql, shape, items);
      return await this.update(sql, shape, items);
    } catch (err) {
      if (rewriteRefused(err) && !unnestRefusals.has(err as object)) unbatchable.add(sql);
      for (const p of items) fail(p, err, true);
    }
  }

  private async oneByOne(items: Pending[]): Promise<void> {
    for (const p of items) {
      this.stats.statements++;
      try {
        const rows = p.kind === 'run' ? [] : await this.plain.all<Record<string, unknown>>(p.sql, p.params);
        const changes = p.kind === 'run' ? (await this.plain.run(p.sql, p.params)).changes : rows.length;
        settle(p, rows, changes);
      } catch (error) {
        fail(p, error);
      }
    }
  }

  /**
   * `fixed`: the text does not depend on the number of rows (unnest forms), so it is sent as a named
   * statement: parsed and planned once per connection, not once per wave.
   */
  private query(text: string, values: unknown[], fixed: boolean): Promise<pg.QueryResult<Record<string, unknown>>> {
    this.stats.statements++;
    const name = fixed ? statementName(text) : undefined;
    return name === undefined ? this.client.query<Record<string, unknown>>(text, values) : this.client.query<Record<string, unknown>>({ name, text, values });
  }

  private async select(sql: string, shape: SelectShape, items: Pending[]): Promise<void> {
    const sets = distinctSets(items);
    if (sets.length === 1) {
      this.stats.statements++;
      const rows = await this.plain.all<Record<string, unknown>>(sql, sets[0]![0]!.params);
      settleShared(sets[0]!, rows);
      return;
    }
    const width = shape.params;
    const types = paramTypes(sets.map((s) => s[0]!.params), width);
    if (types === null) return this.oneByOne(items);
    for (const chunk of chunks(sets, Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMS / Math.max(1, width)))))) {
      const text = builtText(sql, `o${types.join()}`, () => `${unnestSelect(sql, types, 0)} ORDER BY b.svc_i, s.svc_o`);
      const values = unnestValues(chunk.map((set) => set[0]!.params), types.length);
      const r = await this.query(text, width === 0 ? [] : values, true);
      noteColumns(sql, r.fields);
      settleSets(chunk, r.rows, untagged);
    }
  }

  private async insert(sql: string, shape: InsertShape, items: Pending[]): Promise<void> {
    const keyOf = (p: Pending) => shape.keyParams.map((i) => p.params[i]);
    // Additive upserts (counters): rows of one key become one row carrying the sum.
    let rows: { params: unknown[]; items: Pending[] }[];
    if (shape.additive.length > 0 && items.every((p) => shape.additive.every((i) => typeof p.params[i] === 'number'))) {
      const merged = new Map<string, { params: unknown[]; items: Pending[] }>();
      for (const p of items) {
        const k = JSON.stringify(keyOf(p));
        const m = merged.get(k);
        if (m === undefined) merged.set(k, { params: [...p.params], items: [p] });
        else {
          for (const i of shape.additive) m.params[i] = (m.params[i] as number) + (p.params[i] as number);
          m.items.push(p);
        }
      }
      rows = [...merged.values()];
    } else rows = items.map((p) => ({ params: [...p.params], items: [p] }));
    if (shape.keyParams.length > 0) {
      // Upserts take row locks: in key order, so two groups upserting the same keys cannot deadlock.
      const k = new Map(rows.map((r) => [r, JSON.stringify(shape.keyParams.map((i) => r.params[i]))]));
      rows.sort((a, b) => (k.get(a)! < k.get(b)! ? -1 : k.get(a)! > k.get(b)! ? 1 : 0));
    }
    const types = noUnnest.has(sql) ? null : insertTypes(shape, rows.map((r) => r.params));
    const returning = shape.doNothing ? ` RETURNING ${shape.keyColumns.join(', ')}` : '';
    for (const round of rounds(rows, (r) => shape.keyParams.map((i) => r.params[i]))) {
      const size = types !== null ? MAX_ROWS : Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMS / Math.max(1, shape.params))));
      for (const chunk of chunks(round, size)) {
        let r: pg.QueryResult<Record<string, unknown>>;
        const json = types === null ? null : insertColumns(chunk.map((row) => row.params), types);
        if (types !== null && json !== null) {
          try {
            r = await this.query(
              builtText(sql, `i0${returning}${types.join()}${json.forms}`, () => unnestInsert(shape, types, json.forms, 0) + returning),
              json.values,
              true,
            );
          } catch (err) {
            if (rewriteRefused(err)) {
              noUnnest.add(sql);
              unnestRefusals.add(err as object);
            }
            throw err;
          }
        } else {
          let n = 0;
          const tuples = chunk.map(() => replaceMarks(shape.tuple, () => `$${++n}`));
          r = await this.query(
            `${shape.head} ${tuples.join(', ')}${shape.tail}${returning}`,
            chunk.flatMap((row) => row.params),
            false,
          );
        }
        if (shape.doNothing) {
          // The rows inserted come back by key; the others met a conflict and changed nothing.
          const inserted = new Set(r.rows.map((row) => JSON.stringify(shape.keyColumns.map((c) => String(row[c])))));
          for (const row of chunk) {
            const hit = inserted.has(JSON.stringify(shape.keyParams.map((i) => String(row.params[i]))));
            for (const p of row.items) settle(p, [], hit ? 1 : 0);
          }
          continue;
        }
        if (shape.returning) noteColumns(sql, r.fields);
        if (shape.returning && r.rows.length !== chunk.length) {
          throw new Error(`batched insert returned ${r.rows.length} rows for ${chunk.length}`);
        }
        chunk.forEach((row, i) => {
          for (const p of row.items) settle(p, shape.returning ? [{ ...r.rows[i]! }] : [], 1);
        });
      }
    }
  }

  /**
   * The whole wave as one statement, when every text of it is a read, a plain INSERT or an INSERT … ON
   * CONFLICT (key) DO NOTHING (no DO UPDATE, no UPDATE: two parts modifying one row in one statement
   * would be unpredictable), sent as one chunk:
   * `WITH c1 AS (…), c2 AS (…) SELECT …` with the rows of each part that returns rows as JSON, tagged
   * with the part. A data-modifying WITH part runs once whether or not its rows are read, and every part
   * sees the database as it was before the statement: the wave's operations are concurrent, each asking
   * one statement (or statements it asked together, independent), so none waits for another's rows.
   * Rows come back as JSON: a part is combined only when its columns (learned from an earlier run of
   * the text, see columns.ts) read back from JSON as they do from the column itself. False, having sent
   * nothing, when the wave does not qualify.
   */
  private async combine(byText: Map<string, Pending[]>): Promise<boolean> {
    const parts: Part[] = [];
    let base = 0;
    for (const [sql, items] of byText) {
      if (unbatchable.has(sql)) return false;
      const shape = shapeOf(sql);
      if (shape === null || shape.kind === 'update' || shape.kind === 'append') return false;
      const part = shape.kind === 'select' ? selectPart(sql, shape, items, base) : insertPart(sql, shape, items, base, !noUnnest.has(sql));
      if (part === null) return false;
      base += part.values.length;
      if (base > MAX_PARAMS) return false;
      parts.push(part);
    }
    // The text depends on the parts' texts only (whether a part returns rows is a property of its text): kept per
    // list of part ids, so a wave of the same texts as an earlier one reuses its string (builtText).
    const text = builtText('', parts.map((p) => partId(p.text)).join(), () => {
      const outputs = parts.flatMap((p, i) => (p.columns === null ? [] : [`SELECT ${i + 1} AS svc_k, row_number() OVER () AS svc_o, to_json(c${i + 1}.*) AS svc_r FROM c${i + 1}`]));
      return (
        `WITH ${parts.map((p, i) => `c${i + 1} AS (${p.text})`).join(', ')} ` +
        (outputs.length === 0 ? 'SELECT NULL::int AS svc_k, NULL::json AS svc_r WHERE false' : `SELECT svc_k, svc_r FROM (${outputs.join(' UNION ALL ')}) x ORDER BY svc_k, svc_o`)
      );
    });
    const per: Record<string, unknown>[][] = parts.map(() => []);
    try {
      const r = await this.query(
        text,
        parts.flatMap((p) => p.values),
        parts.every((p) => p.fixed),
      );
      for (const row of r.rows) per[Number(row.svc_k) - 1]!.push(row.svc_r as Record<string, unknown>);
    } catch (err) {
      if (rewriteRefused(err)) {
        // An INSERT in its unnest form may be what was refused: those go as VALUES next time; the wave's
        // texts are kept apart for good only when refused again without one.
        const unnested = parts.filter((p) => p.unnested !== undefined);
        if (unnested.length > 0) for (const p of unnested) noUnnest.add(p.unnested!);
        else for (const sql of byText.keys()) unbatchable.add(sql);
      }
      for (const items of byText.values()) for (const p of items) fail(p, err);
      return true;
    }
    this.stats.combined++;
    parts.forEach((p, i) => {
      try {
        p.settle(per[i]!);
      } catch (error) {
        for (const it of p.items) fail(it, error, true);
      }
    });
    return true;
  }

  /**
   * Rows given as arrays (AppendShape): every set's arrays end to end, as one statement of the same text, in chunks of
   * MAX_ROWS sets. A tagged text's rows come back to the set they name (`svc_i`, a position in the first array of the
   * statement), renumbered from 1 within the set, as the set alone would have had them.
   */
  private async append(sql: string, shape: AppendShape, items: Pending[]): Promise<void> {
    if (!items.every((p) => p.params.every((v) => Array.isArray(v)))) return this.oneByOne(items);
    for (const chunk of chunks(items, MAX_ROWS)) {
      const width = chunk[0]!.params.length;
      // Loops rather than flatMap: this ran at 5% of svc's busy time in a decide profile with flatMap.
      const columns: unknown[][] = Array.from({ length: width }, () => []);
      for (const p of chunk) {
        for (let i = 0; i < width; i++) {
          const column = columns[i]!;
          for (const v of p.params[i] as unknown[]) column.push(v);
        }
      }
      // A text column goes in PostgreSQL's binary array form: no escaping on either side (pg's text form runs two
      // regular expressions over every element, and PostgreSQL's array_in parses the quotes back).
      const values: unknown[] = columns.map((c, i) => (shape.types[i] === 'text' ? (binaryTextArray(c) ?? c) : c));
      this.stats.statements++;
      if (shape.tagged !== true) {
        await this.plain.run(sql, values);
        for (const p of chunk) settle(p, [], (p.params[0] as unknown[] | undefined)?.length ?? 0);
        continue;
      }
      const rows = await this.plain.all<Record<string, unknown>>(sql, values);
      // The set of each position of the first array, and where the set starts.
      const owner: number[] = [];
      const start: number[] = [];
      chunk.forEach((p, k) => {
        start.push(owner.length);
        for (let j = 0; j < (p.params[0] as unknown[]).length; j++) owner.push(k);
      });
      const per: Record<string, unknown>[][] = chunk.map(() => []);
      for (const r of rows) {
        const at = Number(r.svc_i) - 1;
        const k = owner[at];
        if (k === undefined) throw new Error(`batched statement returned a row for position ${at + 1} of ${owner.length}`);
        per[k]!.push({ ...r, svc_i: at - start[k]! + 1 });
      }
      chunk.forEach((p, k) => {
        settle(p, per[k]!, per[k]!.length);
      });
    }
  }

  private async update(sql: string, shape: UpdateShape, items: Pending[]): Promise<void> {
    const types = paramTypes(
      items.map((p) => p.params),
      shape.params,
    );
    if (types === null) return this.oneByOne(items);
    for (const round of rounds(items, (p) => p.params.slice(shape.whereFrom))) {
      for (const chunk of chunks(round, Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMS / Math.max(1, shape.params)))))) {
        const cols = Array.from({ length: shape.params }, (_, i) => `p${i + 1}`);
        const body = replaceMarks(shape.body, (i) => `b.p${i + 1}`);
        const where = replaceMarks(shape.where, (i) => `b.p${i + 1 + shape.whereFrom}`);
        const text =
          `UPDATE ${shape.table} SET ${body} FROM unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) WITH ORDINALITY AS b(${[...cols, 'svc_i'].join(', ')}) ` +
          `WHERE ${where} RETURNING b.svc_i`;
        const values = unnestValues(chunk.map((p) => p.params), types.length);
        const rows = (await this.query(text, values, true)).rows;
        const changes = chunk.map(() => 0);
        for (const r of rows) changes[Number(r.svc_i) - 1]!++;
        chunk.forEach((p, i) => {
          settle(p, [], changes[i]!);
        });
      }
    }
  }
}

/** The element type oid of text. */
const TEXT_OID = 25;

/**
 * `values` as a one-dimensional text[] in PostgreSQL's binary form (array_send's layout: dimensions, flags, the
 * element type, then each element's byte length ahead of its UTF-8 bytes, -1 for NULL), which node-pg sends as a
 * binary parameter (a Buffer) and PostgreSQL reads with array_recv: no element is escaped by svc or unescaped by
 * PostgreSQL. A number, bigint or boolean is its text, as pg's text form gives it (`String`); null when a value is
 * anything else (an object, a Date, a nested array: pg's own conversion then applies). The text is checked as
 * for the text form (textrecv: valid UTF-8, no NUL byte), so a value refused one way is refused the other.
 */
export function binaryTextArray(values: readonly unknown[]): Buffer | null {
  let bound = 20;
  let nulls = 0;
  for (const v of values) {
    if (v === null || v === undefined) {
      nulls = 1;
      bound += 4;
    } else if (typeof v === 'string') bound += 4 + 3 * v.length;
    else if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') bound += 4 + String(v).length;
    else return null;
  }
  const buf = Buffer.allocUnsafe(bound);
  buf.writeInt32BE(values.length === 0 ? 0 : 1, 0);
  buf.writeInt32BE(nulls, 4);
  buf.writeInt32BE(TEXT_OID, 8);
  if (values.length === 0) return buf.subarray(0, 12);
  buf.writeInt32BE(values.length, 12);
  buf.writeInt32BE(1, 16);
  let at = 20;
  for (const v of values) {
    if (v === null || v === undefined) {
      buf.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    // At most 3 bytes of UTF-8 per UTF-16 unit (a surrogate pair: 4 bytes for 2 units), so the bound holds.
    const n = buf.write(typeof v === 'string' ? v : String(v), at + 4, 'utf8');
    buf.writeInt32BE(n, at);
    at += 4 + n;
  }
  return buf.subarray(0, at);
}

/** One text's share of a combined wave (BatchPgSql.combine). */
interface Part {
  items: Pending[];
  /** The statement, its parameters numbered from the part's offset. */
  text: string;
  values: unknown[];
  /** The columns of the rows it returns (name, type oid), or null when it returns none. */
  columns: readonly Column[] | null;
  /** Sets the items' outcomes from the part's rows (in order). */
  settle: (rows: Record<string, unknown>[]) => void;
  /** The text does not depend on the number of rows (see BatchPgSql.query). */
  fixed: boolean;
  /** The source text of an INSERT sent in its unnest form. */
  unnested?: string;
}

interface Column {
  name: string;
  type: number;
}

/**
 * A read's items grouped by identical parameters (each distinct set is asked once), in first-asked order.
 * Sets are told apart without a string key per set: a map on the value of the last parameter (in the
 * ingestion path a session or visitor id, distinct per operation) holds the few distinct sets sharing it,
 * compared value by value; when that value does not tell the sets apart (more than LAST_BUCKET distinct
 * sets share it), every set is keyed by its JSON form instead, as before.
 */
function distinctSets(items: Pending[]): Pending[][] {
  if (items.length === 1) return [items];
  const width = items[0]!.params.length;
  if (width > 0 && allSame(items, width)) return [items];
  if (width > 0) {
    const out: Pending[][] = [];
    // The first set of a last value is the map's value itself; a bucket (an array of sets) is made only when a
    // second distinct set shares that value (rare): no array per set beyond the set.
    const byLast = new Map<unknown, Pending[] | Pending[][]>();
    const buckets = new Set<Pending[][]>();
    let i = 0;
    for (; i < items.length; i++) {
      const p = items[i]!;
      if (p.params.length !== width) break;
      const last = keyValue(p.params[width - 1]);
      if (last === NOT_PRIMITIVE) break;
      const found = byLast.get(last);
      if (found === undefined) {
        const set = [p];
        byLast.set(last, set);
        out.push(set);
        continue;
      }
      const bucket = buckets.has(found as Pending[][]) ? (found as Pending[][]) : [found as Pending[]];
      const same = bucket.find((set) => sameParams(set[0]!.params, p.params, width - 1));
      if (same !== undefined) same.push(p);
      else if (bucket.length >= LAST_BUCKET) break;
      else {
        const set = [p];
        if (bucket.length === 1) {
          byLast.set(last, bucket);
          buckets.add(bucket);
        }
        bucket.push(set);
        out.push(set);
      }
    }
    if (i === items.length) return out;
  }
  const distinct = new Map<string, Pending[]>();
  for (const p of items) {
    const k = JSON.stringify(p.params);
    const list = distinct.get(k);
    if (list === undefined) distinct.set(k, [p]);
    else list.push(p);
  }
  return [...distinct.values()];
}

/**
 * Whether every item asks with the same parameters as the first (as their JSON forms would be; primitives only):
 * a look-up every operation of a group asks alike (the site's webhook subscriptions, its event triggers) is one set
 * without a map.
 */
function allSame(items: Pending[], width: number): boolean {
  const first = items[0]!.params;
  for (let k = 0; k < width; k++) if (keyValue(first[k]) === NOT_PRIMITIVE) return false;
  for (let i = 1; i < items.length; i++) {
    const q = items[i]!.params;
    if (q === first) continue;
    if (q.length !== width) return false;
    for (let k = 0; k < width; k++) {
      const a = first[k];
      const b = q[k];
      if (a !== b && keyValue(a) !== keyValue(b)) return false;
    }
  }
  return true;
}

/** At most this many distinct sets share the value of their last parameter before distinctSets keys them by JSON. */
const LAST_BUCKET = 8;
const NOT_PRIMITIVE = Symbol('not primitive');

/**
 * A parameter as a map key that groups what the set's JSON form would (null and undefined alike, numbers
 * without a JSON form as null); NOT_PRIMITIVE for objects (arrays, buffers, dates), keyed by JSON then.
 */
function keyValue(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  const t = typeof v;
  if (t === 'string' || t === 'boolean') return v;
  if (t === 'number') return Number.isFinite(v) ? (Object.is(v, -0) ? 0 : v) : null;
  return NOT_PRIMITIVE;
}

/** Whether the first `n` parameters of two sets are the same (as their JSON forms would be). */
function sameParams(a: Params, b: Params, n: number): boolean {
  for (let i = 0; i < n; i++) {
    if (a[i] === b[i]) continue;
    const x = keyValue(a[i]);
    const y = keyValue(b[i]);
    if (x === NOT_PRIMITIVE || y === NOT_PRIMITIVE) {
      if (JSON.stringify(a[i]) !== JSON.stringify(b[i])) return false;
    } else if (x !== y) return false;
  }
  return true;
}

/** A read of a combined wave: the text as it is (one distinct parameter set), or its unnest form. */
function selectPart(sql: string, shape: SelectShape, items: Pending[], base: number): Part | null {
  const learned = jsonSafeColumns(sql);
  if (learned === null) return null;
  const sets = distinctSets(items);
  if (sets.length === 1) {
    return {
      items,
      text: builtText(sql, `n${base}`, () => replaceMarks(sql, (i) => `$${base + i + 1}`)),
      values: [...sets[0]![0]!.params],
      columns: learned,
      settle: (rows) => settleShared(items, rows.map((row) => fromJson(row, learned))),
      fixed: true,
    };
  }
  const width = shape.params;
  if (width === 0 || sets.length > MAX_ROWS) return null;
  const types = paramTypes(
    sets.map((set) => set[0]!.params),
    width,
  );
  if (types === null) return null;
  return {
    items,
    text: builtText(sql, `s${base},${types.join()}`, () => unnestSelect(sql, types, base)),
    values: unnestValues(sets.map((set) => set[0]!.params), types.length),
    columns: [{ name: 'svc_i', type: INT8 }, { name: 'svc_o', type: INT8 }, ...learned],
    settle: (rows) => settleSets(sets, rows, (row) => fromJson(row, learned)),
    fixed: true,
  };
}

/**
 * A read of one text for many parameter sets: the query joined LATERAL to `unnest` arrays of the
 * parameters (typed `types`, numbered from `base`), each row tagged with its set's ordinal (svc_i)
 * and its place among that set's rows (svc_o).
 */
function unnestSelect(sql: string, types: string[], base: number): string {
  const cols = types.map((_, i) => `p${i + 1}`);
  const inner = replaceMarks(sql, (i) => `b.p${i + 1}`);
  return (
    `SELECT b.svc_i, s.* FROM unnest(${types.map((t, i) => `$${base + i + 1}::${t}[]`).join(', ')}) WITH ORDINALITY AS b(${[...cols, 'svc_i'].join(', ')}) ` +
    `CROSS JOIN LATERAL (SELECT row_number() OVER () AS svc_o, t.* FROM (${inner}) t) s`
  );
}

/**
 * Settles each set's items with the rows tagged with its ordinal (svc_i) and their place among the set's
 * rows (svc_o): `row` makes each row as the caller sees it, without the tags (a new object, so no
 * `delete`, which would turn every row into a slow dictionary-mode object). Rows come in any order.
 */
function settleSets(sets: Pending[][], rows: Record<string, unknown>[], row: (r: Record<string, unknown>) => Record<string, unknown>): void {
  const per: Record<string, unknown>[][] = sets.map(() => []);
  const last: number[] = sets.map(() => 0);
  let sorted = true;
  for (const r of rows) {
    const at = Number(r.svc_i) - 1;
    const o = Number(r.svc_o);
    if (o < last[at]!) sorted = false;
    last[at] = o;
    per[at]!.push(row(r));
  }
  if (!sorted) {
    const inOrder = [...rows].sort((a, b) => Number(a.svc_i) - Number(b.svc_i) || Number(a.svc_o) - Number(b.svc_o));
    return settleSets(sets, inOrder, row);
  }
  for (let i = 0; i < sets.length; i++) settleShared(sets[i]!, per[i]!);
}

/** The row of an unnest read (pg's own object) without its svc_i/svc_o tags. */
function untagged(r: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in r) if (k !== 'svc_i' && k !== 'svc_o') out[k] = r[k];
  return out;
}

/**
 * The same rows for every item of a set: the first caller gets them as they are, each other one its own
 * copies (a caller may change its rows).
 */
function settleShared(set: Pending[], rows: Record<string, unknown>[]): void {
  for (let k = 0; k < set.length; k++) settle(set[k]!, k === 0 ? rows : rows.map((r) => ({ ...r })), rows.length);
}

/**
 * An INSERT of a combined wave: one multi-row VALUES; a plain insert's RETURNING rows in VALUES order,
 * an `ON CONFLICT (key) DO NOTHING` one's inserted rows told apart by their key (each key at most once
 * in the part, the rows in key order as insert() sends them).
 */
function insertPart(sql: string, shape: InsertShape, items: Pending[], base: number, unnest: boolean): Part | null {
  if (items.length > MAX_ROWS) return null;
  if (shape.doNothing) return doNothingPart(sql, shape, items, base, unnest);
  if (shape.keyParams.length > 0 || /\bon\s+conflict\b/i.test(shape.tail)) return null;
  const columns = shape.returning ? jsonSafeColumns(sql) : null;
  if (shape.returning && columns === null) return null;
  const form = insertForm(sql, shape, items.map((p) => p.params), base, unnest, '');
  return {
    items,
    ...form,
    columns,
    settle: (rows) => {
      if (shape.returning && rows.length !== items.length) throw new Error(`batched insert returned ${rows.length} rows for ${items.length}`);
      items.forEach((p, i) => {
        settle(p, shape.returning ? [fromJson(rows[i]!, columns!)] : [], 1);
      });
    },
  };
}

function doNothingPart(sql: string, shape: InsertShape, items: Pending[], base: number, unnest: boolean): Part | null {
  const keyOf = (p: Pending) => JSON.stringify(shape.keyParams.map((i) => String(p.params[i])));
  const keyed = items.map((p) => ({ p, k: keyOf(p) }));
  if (new Set(keyed.map((x) => x.k)).size !== keyed.length) return null;
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  const form = insertForm(sql, shape, keyed.map((x) => x.p.params), base, unnest, ` RETURNING ${shape.keyColumns.join(', ')}`);
  return {
    items,
    ...form,
    columns: shape.keyColumns.map((name) => ({ name, type: TEXT })),
    settle: (rows) => {
      const inserted = new Set(rows.map((row) => JSON.stringify(shape.keyColumns.map((c) => String(row[c] ?? null)))));
      for (const x of keyed) settle(x.p, [], inserted.has(x.k) ? 1 : 0);
    },
  };
}

/** An INSERT of `rows` (parameter sets, in this order) as a combined wave's part: its unnest form where it can be typed, else multi-row VALUES. */
function insertForm(
  sql: string,
  shape: InsertShape,
  rows: Params[],
  base: number,
  unnest: boolean,
  returning: string,
): { text: string; values: unknown[]; fixed: boolean; unnested?: string } {
  const types = unnest ? insertTypes(shape, rows) : null;
  const json = types === null ? null : insertColumns(rows, types);
  if (types !== null && json !== null) {
    const text = builtText(sql, `i${base}${returning}${types.join()}${json.forms}`, () => unnestInsert(shape, types, json.forms, base) + returning);
    return { text, values: json.values, fixed: true, unnested: sql };
  }
  let n = base;
  const tuples = rows.map(() => replaceMarks(shape.tuple, () => `$${++n}`));
  return { text: `${shape.head} ${tuples.join(', ')}${shape.tail}${returning}`, values: rows.flat(), fixed: false };
}

/**
 * The unnest form of an INSERT: `INSERT INTO t (cols) SELECT <the tuple, b.pN::type for its marks>
 * FROM ROWS FROM (json_array_elements_text($1::json), string_to_table($2, E'\\x1e'), …) AS b(p1, …)<what
 * followed the tuple>`, one parameter per mark (numbered from `base`, see insertColumns), each element cast to
 * the parameter's type. `forms`: per mark, `j` for a JSON array, `s` for text values joined by U+001E.
 * Its text is the same for any number of rows (a named statement, planned once; one per forms string), and
 * rows are inserted, and returned, in array order. JSON rather than PostgreSQL arrays: JSON.stringify
 * writes a column of strings several times faster than node-pg's array escaping, and the rows' bodies
 * and payloads are most of the bytes; joined text cheaper still on both sides (no escaping, no JSON parse).
 */
function unnestInsert(shape: InsertShape, types: string[], forms: string, base: number): string {
  const cols = types.map((_, i) => `p${i + 1}`);
  const cast = (i: number) => (types[i] === 'text' ? `b.p${i + 1}` : `b.p${i + 1}::${types[i]}`);
  const source = (i: number) =>
    forms[i] === 's' ? `string_to_table($${base + i + 1}, E'\\x1e')` : `json_array_elements_text($${base + i + 1}::json)`;
  return (
    `${shape.into} SELECT ${replaceMarks(shape.tuple.slice(1, -1), cast)} ` +
    `FROM ROWS FROM (${types.map((_, i) => source(i)).join(', ')}) AS b(${cols.join(', ')})${shape.tail}`
  );
}

/** U+001E (record separator), between the values of a joined text column: see joinedText. */
const SEPARATOR = '\u001e';

/**
 * One parameter per parameter position, the rows' values in row order: for a text column whose values
 * joinedText can join, those values joined by U+001E (`s` in `forms`), else a JSON array (`j`; null for
 * null); strings with a lone surrogate are sent as node-pg would send them (the surrogate replaced by
 * U+FFFD). Null when a number is not finite (JSON has no NaN or infinities): the rows then go as VALUES.
 */
function insertColumns(rows: readonly Params[], types: readonly string[]): { values: string[]; forms: string } | null {
  const values: string[] = [];
  let forms = '';
  const column: unknown[] = new Array<unknown>(rows.length);
  for (let i = 0; i < types.length; i++) {
    const joined = types[i] === 'text' ? joinedText(rows, i) : null;
    if (joined !== null) {
      values.push(joined);
      forms += 's';
      continue;
    }
    for (let r = 0; r < rows.length; r++) {
      const v = rows[r]![i];
      if (typeof v === 'number' && !Number.isFinite(v)) return null;
      column[r] = typeof v === 'string' && !(v as WellFormed).isWellFormed() ? (v as WellFormed).toWellFormed() : (v ?? null);
    }
    values.push(JSON.stringify(column));
    forms += 'j';
  }
  return { values, forms };
}

/**
 * The values of column `i` joined by U+001E, split again by string_to_table: no escaping in svc and no JSON
 * parsing in the backend (the bodies and payloads of events are most of a group's bytes). Null (a JSON array
 * instead) unless every value is a string holding neither U+001E nor NUL (JSON text never holds either: a
 * control character is escaped there; NUL goes as JSON so that it fails as before), and for a single row
 * (nothing to gain; and string_to_table('') gives no row, where one empty string is one row).
 */
function joinedText(rows: readonly Params[], i: number): string | null {
  if (rows.length < 2) return null;
  const parts = new Array<string>(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const v = rows[r]![i];
    if (typeof v !== 'string' || v.includes(SEPARATOR) || v.includes('\0')) return null;
    parts[r] = v;
  }
  const joined = parts.join(SEPARATOR);
  return (joined as WellFormed).isWellFormed() ? joined : (joined as WellFormed).toWellFormed();
}

/** String.prototype.isWellFormed / toWellFormed (Node 20; ES2024, past this project's lib setting). */
type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/**
 * One array per parameter position, the rows' values in row order, each already in PostgreSQL's array
 * text form (`{"a","b\\"c",NULL,12}`): the values are strings, numbers and booleans only (paramTypes,
 * insertTypes), written as node-pg would write them, in one pass per array instead of node-pg's
 * per-element escaping (two regular-expression replaces of every string, ~4% of svc's CPU under
 * bench:ingest).
 */
function unnestValues(rows: readonly Params[], width: number): string[] {
  const out: string[] = [];
  const plain = new Array<string>(rows.length);
  for (let i = 0; i < width; i++) {
    // The common column (keys: site, session, visitor ids): strings only, none to escape, joined in one go (no
    // string object per element).
    let r = 0;
    for (; r < rows.length; r++) {
      const v = rows[r]![i];
      if (typeof v !== 'string' || ESCAPE.test(v)) break;
      plain[r] = v;
    }
    if (r === rows.length) {
      out.push(rows.length === 0 ? '{}' : `{"${plain.join('","')}"}`);
      continue;
    }
    let a = '{';
    for (let r = 0; r < rows.length; r++) {
      if (r > 0) a += ',';
      const v = rows[r]![i];
      if (v === null || v === undefined) a += 'NULL';
      else if (typeof v === 'string') a += `"${ESCAPE.test(v) ? v.replace(ESCAPE_ALL, '\\$&') : v}"`;
      else a += String(v);
    }
    out.push(`${a}}`);
  }
  return out;
}

const ESCAPE = /["\\]/;
const ESCAPE_ALL = /["\\]/g;

/**
 * The array type of each parameter of an INSERT's unnest form: the target column's type where the
 * parameter fills a column alone (`?` in the tuple, the column's type known), else the type its
 * values ask for (paramTypes). Null (multi-row VALUES instead) when the text has no parameters, a
 * value is not a string, number or boolean, a column is of an array type, or a parameter inside an
 * expression is null in every row (its type unknown).
 */
function insertTypes(shape: InsertShape, rows: readonly Params[]): string[] | null {
  if (shape.params === 0) return null;
  const known = tableTypes.get(shape.table);
  const out: string[] = [];
  for (let i = 0; i < shape.params; i++) {
    const column = shape.markColumns[i];
    const type = column === null || column === undefined ? undefined : known?.get(column);
    if (type !== undefined && !type.endsWith(']')) {
      for (const r of rows) {
        const v = r[i];
        if (v !== null && v !== undefined && typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') return null;
      }
      out.push(type);
      continue;
    }
    if (rows.every((r) => r[i] === null || r[i] === undefined)) return null;
    const t = paramTypes(
      rows.map((r) => [r[i]]),
      1,
    );
    if (t === null) return null;
    out.push(t[0]!);
  }
  return out;
}

const INT8 = 20;
const TEXT = 25;
/** Types whose JSON form (to_json) parses to the value node-pg gives for the column (svc's type parsers, sql.ts). */
const JSON_AS_IS = new Set([16, 19, 20, 21, 23, 25, 26, 114, 1042, 1043, 2950, 3802]);
/** Numbers whose JSON form is a string for NaN and the infinities: read with Number(), as their parsers do. */
const JSON_NUMBER = new Set([700, 701, 1700]);

/**
 * The answer of jsonSafeColumns per learned column list (a text's columns are learned once and never change,
 * columns.ts): the check runs once per text, not once per wave (it made a Set per part of every combined wave).
 */
const jsonSafe = new WeakMap<readonly Column[], boolean>();

/** The learned result columns of a text when every one reads back from JSON unchanged; else null. */
function jsonSafeColumns(sql: string): readonly Column[] | null {
  const cols = resultColumns.get(sql);
  if (cols === undefined) return null;
  let safe = jsonSafe.get(cols);
  if (safe === undefined) {
    safe = true;
    const names = new Set<string>();
    for (const c of cols) {
      if ((!JSON_AS_IS.has(c.type) && !JSON_NUMBER.has(c.type)) || names.has(c.name) || c.name.startsWith('svc_')) {
        safe = false;
        break;
      }
      names.add(c.name);
    }
    jsonSafe.set(cols, safe);
  }
  return safe ? cols : null;
}

/** A row of a combined wave, read from its JSON form, as the column types read it. */
function fromJson(row: Record<string, unknown>, columns: readonly Column[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of columns) {
    const v = row[c.name];
    out[c.name] = v === undefined ? null : typeof v === 'string' && JSON_NUMBER.has(c.type) ? Number(v) : v;
  }
  return out;
}

interface SelectShape {
  kind: 'select';
  params: number;
}
interface InsertShape {
  kind: 'insert';
  params: number;
  /** `INSERT INTO t (cols) VALUES` */
  head: string;
  /** `INSERT INTO t (cols)` */
  into: string;
  /** The table (lower case, as written). */
  table: string;
  /** Per parameter, the column it fills when it is a tuple element on its own (`?`), else null. */
  markColumns: (string | null)[];
  /** The one VALUES tuple, with its parentheses, `?` marks inside. */
  tuple: string;
  /** What follows the tuple (ON CONFLICT …, RETURNING …): no parameters. */
  tail: string;
  returning: boolean;
  /** Positions of the parameters that make up the conflict key (upserts); [] for plain inserts. */
  keyParams: number[];
  /** The conflict key's columns (in the order of keyParams). */
  keyColumns: string[];
  /** `ON CONFLICT (key) DO NOTHING` without RETURNING: the inserted rows are told apart by their key. */
  doNothing: boolean;
  /** Parameters of an additive upsert (`DO UPDATE SET c = t.c + excluded.c`, only such assignments): summed per key. */
  additive: number[];
}
interface UpdateShape {
  kind: 'update';
  params: number;
  table: string;
  body: string;
  where: string;
  /** Parameters before this index are the SET clause's, the rest the WHERE clause's. */
  whereFrom: number;
}

/**
 * `INSERT INTO t (cols) SELECT * FROM unnest(?::type[], …)`: every parameter an array of one column's values.
 * `tagged`: `WITH name (cols, svc_i) AS (SELECT * FROM ROWS FROM (unnest((SELECT ?::type[])), …)
 * WITH ORDINALITY), …` (the arrays behind a sub-select: a row estimate that does not depend on them, so a generic plan) with no other parameter, whose every set stands alone (what it reads and writes is its own, so it does the same whatever
 * the other sets of the statement; ExposuresRepo.insertIfFacts) and whose rows name their set by `svc_i`.
 */
interface AppendShape {
  kind: 'append';
  params: number;
  /** Each parameter's element type (`text` of `?::text[]`). */
  types: string[];
  tagged?: true;
}

type Shape = SelectShape | InsertShape | UpdateShape | AppendShape;

const shapes = new Map<string, Shape | null>();

/**
 * Texts of the unnest-CTE append form whose insert is an upsert that does not depend on the order of its rows
 * (declared by their module: orderFreeAppend). Any other ON CONFLICT but DO NOTHING keeps a text from being
 * appended, since statements one after another could leave other rows than one statement of their rows.
 */
const orderFree = new Set<string>();

/**
 * Declares `sql` (a WITH name (…) AS (SELECT * FROM unnest(…)), … INSERT … ON CONFLICT … text) an append whose
 * result is the same whatever order its rows come in, in one statement or several (e.g. an upsert that keeps a
 * minimum and a maximum, with the rows of one key reduced to one first): concurrent sets' arrays may then be joined
 * end to end. Returns `sql`.
 */
export function orderFreeAppend(sql: string): string {
  orderFree.add(sql);
  shapes.delete(sql);
  return sql;
}

/** How a text can be batched, or null when it is sent as it is. */
export function shapeOf(sql: string): Shape | null {
  if (shapes.has(sql)) return shapes.get(sql)!;
  const shape = parseShape(sql);
  if (shapes.size > 2000) shapes.clear();
  shapes.set(sql, shape);
  return shape;
}

function parseShape(sql: string): Shape | null {
  const marks = markPositions(sql);
  if (marks === null) return null;
  const lower = maskQuoted(sql).toLowerCase();
  const append =
    /^\s*insert\s+into\s+[a-z_][a-z0-9_.]*\s*\([^)]*\)\s*select\s+\*\s+from\s+unnest\s*\(([^()]*)\)\s*$/.exec(lower) ??
    // The same rows as a CTE read by the statement's inserts (exposures and their first arms): each row stands alone
    // (plain inserts, or ON CONFLICT DO NOTHING), so arrays end to end give what the statements one after another would.
    /^\s*with\s+[a-z_][a-z0-9_]*\s*\([^)]*\)\s*as\s*\(\s*select\s+\*\s+from\s+unnest\s*\(([^()]*)\)\s*\)\s*,(?:(?!\bon\s+conflict\b|\breturning\b)[^?])*\binsert\s+into\b(?:(?!\bon\s+conflict\b|\breturning\b)[^?])*(?:\bon\s+conflict\s+do\s+nothing\s*)?$/.exec(
      lower,
    ) ??
    (orderFree.has(sql) ? /^\s*with\s+[a-z_][a-z0-9_]*\s*\([^)]*\)\s*as\s*\(\s*select\s+\*\s+from\s+unnest\s*\(([^()]*)\)\s*\)\s*,(?:(?!\breturning\b)[^?])*$/.exec(lower) : null);
  if (append !== null) {
    const args = append[1]!.split(',').map((a) => a.trim());
    if (marks.length === 0 || args.length !== marks.length || !args.every((a) => /^\?::[a-z0-9_]+\[\]$/.test(a))) return null;
    return { kind: 'append', params: marks.length, types: args.map((a) => a.slice(3, -2)) };
  }
  // Rows that come back tagged with the position of their set (AppendShape.tagged): the ordinality column last.
  const tagged =
    /^\s*with\s+[a-z_][a-z0-9_]*\s*\(([^)]*)\)\s*as\s*\(\s*select\s+\*\s+from\s+rows\s+from\s*\(((?:\s*unnest\s*\(\s*\(\s*select\s+\?::[a-z0-9_]+\[\]\s*\)\s*\)\s*,?)+)\)\s*with\s+ordinality\s*\)\s*,[^?]*$/.exec(
      lower,
    );
  if (tagged !== null) {
    const columns = tagged[1]!.split(',').map((c) => c.trim());
    const args = tagged[2]!.split(',').map((a) => a.trim());
    if (columns[columns.length - 1] !== 'svc_i' || columns.length !== args.length + 1 || args.length !== marks.length) return null;
    return { kind: 'append', params: marks.length, types: args.map((a) => /\?::([a-z0-9_]+)\[\]/.exec(a)![1]!), tagged: true };
  }
  if (/^\s*select\b/.test(lower)) {
    // Row locks, set operations at top level and statements that write are left alone.
    if (/\bfor\s+(update|share|no\s+key|key)\b/.test(lower) || /\b(union|intersect|except)\b/.test(lower)) return null;
    if (/\blimit\s+\?|\boffset\s+\?/.test(lower)) return null;
    return { kind: 'select', params: marks.length };
  }
  const ins = /^\s*insert\s+into\s+([a-z_][a-z0-9_.]*)\s*\(([^)]*)\)\s*values\s*\(/.exec(lower);
  if (ins !== null) {
    const open = ins[0].length - 1;
    const close = matchingParen(lower, open);
    if (close < 0) return null;
    const tail = sql.slice(close + 1);
    if (marks.some((m) => m > close)) return null;
    const t = lower.slice(close + 1);
    if (/^\s*,/.test(t)) return null; // already several tuples
    let keyParams: number[] = [];
    const keyColumns: string[] = [];
    const additive: number[] = [];
    let doNothing = false;
    if (/\bon\s+conflict\b/.test(t)) {
      doNothing = /\bdo\s+nothing\b/.test(t);
      if (doNothing && /\breturning\b/.test(t)) return null; // which rows come back would be ambiguous
      if ((!doNothing && !/\bdo\s+update\b/.test(t)) || /\bwhere\b/.test(t)) return null; // a conditional update: changes per row unknown
      const target = /\bon\s+conflict\s*\(([^)]*)\)/.exec(t);
      if (target === null) return null;
      const columns = ins[2]!.split(',').map((c) => c.trim());
      const tuple = lower.slice(open + 1, close);
      const parts = splitTopLevel(tuple).map((p) => p.trim());
      if (parts.length !== columns.length) return null;
      let mark = 0;
      const paramAt: (number | null)[] = parts.map((p) => {
        if (p === '?') return mark++;
        mark += countMarks(p);
        return null;
      });
      keyParams = [];
      for (const c of target[1]!.split(',').map((x) => x.trim())) {
        const at = columns.indexOf(c);
        if (at < 0) return null;
        const pi = paramAt[at];
        if (pi === null || pi === undefined) {
          if (countMarks(parts[at]!) > 0 || doNothing) return null; // the key is an expression of parameters, or a constant DO NOTHING cannot tell apart
          continue; // a constant: the same for every row
        }
        keyParams.push(pi);
        keyColumns.push(c);
      }
      const set = /\bdo\s+update\s+set\s+(.*?)(\breturning\b|$)/s.exec(t);
      if (set !== null) {
        const assignments = splitTopLevel(set[1]!).map((a) => a.trim());
        const adds = assignments.map((a) => /^([a-z_][a-z0-9_]*)\s*=\s*[a-z_][a-z0-9_]*\.\1\s*\+\s*excluded\.\1$/.exec(a)?.[1]);
        if (adds.every((c) => c !== undefined)) {
          for (const c of adds) {
            const pi = paramAt[columns.indexOf(c)];
            if (pi === null || pi === undefined) {
              additive.length = 0;
              break;
            }
            additive.push(pi);
          }
        }
      }
    } else if (/\bon\s+conflict\b|\bselect\b/.test(t)) return null;
    const targets = ins[2]!.split(',').map((c) => c.trim());
    const elements = splitTopLevel(lower.slice(open + 1, close)).map((p) => p.trim());
    const markColumns: (string | null)[] = [];
    elements.forEach((e, i) => {
      if (e === '?') markColumns.push(elements.length === targets.length ? targets[i]! : null);
      else for (let k = countMarks(e); k > 0; k--) markColumns.push(null);
    });
    if (markColumns.length !== marks.length) return null;
    return {
      kind: 'insert',
      params: marks.length,
      head: sql.slice(0, open).replace(/\s+$/, ''),
      into: sql.slice(0, ins[0].search(/\)\s*values\s*\($/) + 1),
      table: ins[1]!.slice(ins[1]!.lastIndexOf('.') + 1),
      markColumns,
      tuple: sql.slice(open, close + 1),
      tail,
      returning: /\breturning\b/.test(t),
      keyParams,
      keyColumns,
      doNothing,
      additive,
    };
  }
  const upd = /^\s*update\s+([a-z_][a-z0-9_.]*)\s+set\s+/.exec(lower);
  if (upd !== null) {
    if (/\b(returning|from|limit|order)\b/.test(lower.slice(upd[0].length))) return null;
    const where = lower.search(/\bwhere\b/);
    if (where < 0) return null;
    const whereFrom = marks.filter((m) => m < where).length;
    if (/\bselect\b/.test(lower)) return null; // subqueries
    if (whereFrom === marks.length) return null; // a WHERE without parameters: every set would update the same rows
    return {
      kind: 'update',
      params: marks.length,
      table: sql.slice(upd[0].indexOf(upd[1]!), upd[0].indexOf(upd[1]!) + upd[1]!.length),
      body: sql.slice(upd[0].length, where),
      where: sql.slice(where + 'where'.length),
      whereFrom,
    };
  }
  return null;
}

/** The text with quoted strings and identifiers blanked (same length), so keyword searches skip them. */
function maskQuoted(sql: string): string {
  let out = '';
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote !== null) {
      out += ch === quote ? ch : ' ';
      if (ch === quote) quote = null;
    } else {
      if (ch === "'" || ch === '"') quote = ch;
      out += ch;
    }
  }
  return out;
}

/** Offsets of the `?` marks outside quotes; null when the text already uses `$n` (sent as it is). */
function markPositions(sql: string): number[] | null {
  const masked = maskQuoted(sql);
  if (/\$\d/.test(masked)) return null;
  const out: number[] = [];
  for (let i = 0; i < masked.length; i++) if (masked[i] === '?') out.push(i);
  return out;
}

function countMarks(s: string): number {
  return markPositions(s)?.length ?? 0;
}

function matchingParen(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')' && --depth === 0) return i;
  }
  return -1;
}

function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')') depth--;
    else if (s[i] === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

/** The text cut at its `?` marks (outside quotes): the pieces between them, per text (the texts are few). */
const pieces = new Map<string, readonly string[]>();

function piecesOf(sql: string): readonly string[] {
  let out = pieces.get(sql);
  if (out === undefined) {
    const marks = markPositions(sql) ?? [];
    const cut: string[] = [];
    let last = 0;
    for (const m of marks) {
      cut.push(sql.slice(last, m));
      last = m + 1;
    }
    cut.push(sql.slice(last));
    out = cut;
    if (pieces.size > 2000) pieces.clear();
    pieces.set(sql, out);
  }
  return out;
}

/** Replaces the i-th `?` (outside quotes) with `to(i)`. */
function replaceMarks(sql: string, to: (i: number) => string): string {
  const cut = piecesOf(sql);
  let out = cut[0]!;
  for (let i = 1; i < cut.length; i++) out += to(i - 1) + cut[i]!;
  return out;
}

/**
 * The texts built from a repository text for a wave (its unnest forms, numbered from a base; combined
 * waves), kept per source text and form: the same string object every wave, so that its hash (the
 * prepared statement's name, parts' ids) is computed once and node-pg's check of a named statement's text
 * is a pointer comparison, instead of a new string of a few kilobytes built, hashed and compared per wave.
 */
const built = new Map<string, Map<string, string>>();

function builtText(source: string, form: string, build: () => string): string {
  let forms = built.get(source);
  if (forms === undefined) {
    if (built.size > 2000) built.clear();
    built.set(source, (forms = new Map()));
  }
  let text = forms.get(form);
  if (text === undefined) {
    text = build();
    if (forms.size > 200) forms.clear();
    forms.set(form, text);
  }
  return text;
}

/** A small number per part text of a combined wave (see combinedText), bounded like the other caches. */
const partIds = new Map<string, number>();

function partId(text: string): number {
  let id = partIds.get(text);
  if (id === undefined) {
    if (partIds.size > 5000) {
      partIds.clear();
      built.clear();
    }
    partIds.set(text, (id = partIds.size + 1));
  }
  return id;
}

/**
 * The array type that carries each parameter position across the sets, from
 * the JavaScript values: integers int8, other numbers float8, strings text,
 * booleans bool, all-null text. Null when a position mixes kinds or holds
 * anything else (then the statements are sent one by one).
 */
function paramTypes(sets: Params[], width: number): string[] | null {
  const out: string[] = [];
  for (let i = 0; i < width; i++) {
    let t: string | null = null;
    for (const s of sets) {
      const v = s[i];
      if (v === null || v === undefined) continue;
      const k = typeof v === 'string' ? 'text' : typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? (Number.isInteger(v) ? 'int8' : 'float8') : null;
      if (k === null) return null;
      if (t === null || t === k) t = k;
      else if ((t === 'int8' && k === 'float8') || (t === 'float8' && k === 'int8')) t = 'float8';
      else return null;
    }
    out.push(t ?? 'text');
  }
  return out;
}

/** Splits items in rounds so that no two items of one round share a key (order kept within a key). */
function rounds<T>(items: T[], key: (t: T) => readonly unknown[]): T[][] {
  const out: T[][] = [];
  const seen = new Map<string, number>();
  for (const it of items) {
    const k = key(it);
    const s = k.length === 0 ? null : JSON.stringify(k);
    const r = s === null ? 0 : (seen.get(s) ?? -1) + 1;
    if (s !== null) seen.set(s, r);
    (out[r] ??= []).push(it);
  }
  return out;
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
