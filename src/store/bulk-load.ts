import type { Sql } from './sql.js';
import type { Store } from './store.js';

/**
 * Bulk loading of the tables a synthetic data set fills (`svc seed`, see
 * src/demo/synthetic.ts for what is generated): buffered multi-row INSERTs of a
 * fixed shape through a write operation's executor, and on SQLite
 * synchronous=OFF with a large page cache while a load runs. The SQL of
 * seeding lives here; the generator knows no SQL.
 */

/** Page cache of the seeding connection, KiB: holds the B-tree pages that random keys (hashes, emails) touch. */
export const SEED_CACHE_KIB = 512 * 1024;

/** Rows per INSERT statement: at most 64 × 9 = 576 parameters, far below PostgreSQL's 65,535. */
const CHUNK_ROWS = 64;

/**
 * Buffered multi-row INSERT into one table, with positional `?` parameters
 * (valid on SQLite and PostgreSQL). Rows are gathered CHUNK_ROWS at a time;
 * the write operation writes each full chunk as soon as it fills (`writeFull`:
 * rows then die young, which keeps the garbage collector's work small) and the
 * last, partial chunk at the end of the batch (`writeRest`, in power-of-two
 * pieces). Every full chunk uses the same SQL text, so it is prepared (SQLite)
 * or converted (PostgreSQL) once; a table never needs more than 7 texts.
 */
class TableBuffer {
  protected full: unknown[][] = [];
  protected current: unknown[] = [];
  private readonly size: number;
  private readonly texts = new Map<number, string>();

  constructor(
    private readonly head: string,
    private readonly width: number,
    private readonly tail = '',
  ) {
    this.size = width * CHUNK_ROWS;
  }

  /** The INSERT of `rows` rows (built once per row count). */
  private text(rows: number): string {
    let t = this.texts.get(rows);
    if (t === undefined) {
      const tuple = `(${Array.from({ length: this.width }, () => '?').join(', ')})`;
      t = `${this.head} VALUES ${Array.from({ length: rows }, () => tuple).join(', ')}${this.tail}`;
      this.texts.set(rows, t);
    }
    return t;
  }

  add(...values: unknown[]): void {
    for (const v of values) this.current.push(v);
    if (this.current.length >= this.size) this.chunkFilled();
  }

  protected chunkFilled(): void {
    this.full.push(this.current);
    this.current = [];
  }

  get hasFull(): boolean {
    return this.full.length > 0;
  }

  /** Writes the full chunks gathered so far, in order, through `sql` (the write operation's executor). */
  async writeFull(sql: Sql): Promise<void> {
    const chunks = this.full;
    this.full = [];
    for (const chunk of chunks) await sql.run(this.text(CHUNK_ROWS), chunk);
  }

  /** Writes every row still buffered (full chunks, then the partial one). */
  async writeRest(sql: Sql): Promise<void> {
    await this.writeFull(sql);
    const rest = this.current;
    this.current = [];
    let at = 0;
    for (let rows = rest.length / this.width; rows > 0; ) {
      let n = CHUNK_ROWS;
      while (n > rows) n >>= 1;
      await sql.run(this.text(n), rest.slice(at * this.width, (at + n) * this.width));
      at += n;
      rows -= n;
    }
  }

  clear(): void {
    this.full = [];
    this.current = [];
  }
}

/**
 * identity_hashes rows, written with the upsert of ProfilesRepo.setHash (the
 * newest owner of a hash wins). PostgreSQL refuses one INSERT that hits the
 * same conflict key twice, so a hash added twice within one chunk is merged
 * into its first row, taking the later owner: the end state of upserting the
 * rows one by one (the first row's created_at, the last row's profile_id).
 * Repeats in different chunks are different statements and need nothing. The
 * generator numbers emails and phones uniquely, so this is only a guard.
 */
class HashBuffer extends TableBuffer {
  /** `${kind} ${hash}` → offset of its row in the current chunk. */
  private seen = new Map<string, number>();

  constructor() {
    super(
      'INSERT INTO identity_hashes (site_id, kind, hash, profile_id, created_at)',
      5,
      ' ON CONFLICT (site_id, kind, hash) DO UPDATE SET profile_id = excluded.profile_id',
    );
  }

  addHash(siteId: string, kind: string, hash: string, profileId: string, createdAt: number): void {
    const key = `${kind} ${hash}`;
    const at = this.seen.get(key);
    if (at !== undefined) {
      this.current[at + 3] = profileId;
      return;
    }
    this.seen.set(key, this.current.length);
    this.add(siteId, kind, hash, profileId, createdAt);
  }

  protected override chunkFilled(): void {
    super.chunkFilled();
    this.seen.clear();
  }

  override clear(): void {
    super.clear();
    this.seen.clear();
  }
}

/** The per-table buffers of a bulk load, written in this order. */
export function bulkTables() {
  const tables = {
    profile: new TableBuffer('INSERT INTO profiles (id, site_id, known, traits, created_at, updated_at)', 6),
    identity: new TableBuffer('INSERT INTO identities (site_id, kind, value, profile_id, created_at)', 5),
    hash: new HashBuffer(),
    session: new TableBuffer('INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen, ip, user_agent, landing_url)', 9),
    event: new TableBuffer('INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at)', 8),
    conversion: new TableBuffer('INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at)', 8),
    score: new TableBuffer('INSERT INTO scores (site_id, session_id, profile_id, visitor_id, score, body, received_at)', 7),
  };
  const all = Object.values(tables);
  return {
    ...tables,
    hasFull: () => all.some((b) => b.hasFull),
    writeFull: async (sql: Sql) => {
      for (const b of all) if (b.hasFull) await b.writeFull(sql);
    },
    writeRest: async (sql: Sql) => {
      for (const b of all) await b.writeRest(sql);
    },
    clear: () => {
      for (const b of all) b.clear();
    },
  };
}

export type BulkTables = ReturnType<typeof bulkTables>;

/** Profiles in the whole database (every site): the generator numbers its emails and phones from it. */
export async function countAllProfiles(store: Store): Promise<number> {
  return Number((await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM profiles'))?.n ?? 0);
}

/**
 * Runs a bulk load. On SQLite the store's connection runs with
 * synchronous=OFF and a large page cache until it resolves (restored
 * afterwards), so the caller should not count on the durability of other
 * writes meanwhile; on PostgreSQL it just runs.
 */
export async function withBulkSettings<T>(store: Store, load: () => Promise<T>): Promise<T> {
  const db = store.db;
  if (db === null) return load();
  const restore = { synchronous: db.pragma('synchronous', { simple: true }) as number, cache_size: db.pragma('cache_size', { simple: true }) as number };
  db.pragma('synchronous = OFF');
  db.pragma(`cache_size = ${-SEED_CACHE_KIB}`);
  try {
    return await load();
  } finally {
    db.pragma(`synchronous = ${restore.synchronous}`);
    db.pragma(`cache_size = ${restore.cache_size}`);
  }
}
