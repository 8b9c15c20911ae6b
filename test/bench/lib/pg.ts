/**
 * PostgreSQL for the benchmarks (`--database-url URL`): every target or phase
 * on PostgreSQL gets a fresh schema of its own, named
 * `bench_<pid>_<target>`, through svc's own `schema` URL parameter (svc
 * creates it and puts every table there), and the schema is dropped
 * (DROP SCHEMA ... CASCADE) when the target is done, unless --keep.
 *
 * The benchmark itself talks to the server through the `pg` package only to
 * check it is reachable, to drop schemas and to read which instance holds
 * which webhook lane lease; every figure comes from svc.
 */
import pg from 'pg';

/** What svc accepts as a schema name (src/store/pg/store.ts). */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/i;

/** Checks a --database-url value; returns the error, or null when it looks usable. */
export function databaseUrlError(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `--database-url: not a URL: ${JSON.stringify(redact(url))}`;
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') return `--database-url: expected postgres://..., got ${u.protocol}//...`;
  return null;
}

/** The URL without a password, for printing. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** `url` with svc's `schema` parameter set to `schema` (replacing any the URL had). */
export function withSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('schema', schema);
  return u.toString();
}

/** `url` without svc's `schema` parameter: what a plain pg client connects with. */
function clientUrl(url: string): string {
  const u = new URL(url);
  u.searchParams.delete('schema');
  return u.toString();
}

const quote = (ident: string) => `"${ident.replace(/"/g, '""')}"`;

/**
 * The schemas one benchmark run creates on one server. `url(target)` names a
 * fresh schema for a target and drops any left over under that name; `drop`
 * removes one; `dropAll` removes whatever is left (at the end of the run and
 * on SIGINT). Every statement is bounded (connect 5 s, lock wait 10 s,
 * statement 60 s).
 */
export class BenchSchemas {
  private readonly live = new Set<string>();

  constructor(
    private readonly baseUrl: string,
    private readonly keep: boolean,
    private readonly prefix = `bench_${process.pid}`,
  ) {}

  /** The schema a target uses: bench_<pid>_<target>, punctuation turned into `_`. */
  schemaOf(target: string): string {
    const name = `${this.prefix}_${target.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);
    if (!SCHEMA_NAME.test(name)) throw new Error(`cannot make a schema name of ${JSON.stringify(target)}`);
    return name;
  }

  /** How this run's schema names start (bench_<pid>). */
  get namePrefix(): string {
    return this.prefix;
  }

  /** Whether the URL given already named a schema (it is replaced by one per target). */
  get urlHadSchema(): boolean {
    return new URL(this.baseUrl).searchParams.has('schema');
  }

  /** Runs `fn` with a connected client; the client is always closed. */
  async withClient<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({
      connectionString: clientUrl(this.baseUrl),
      connectionTimeoutMillis: 5_000,
      statement_timeout: 60_000,
      lock_timeout: 10_000,
      query_timeout: 70_000,
      application_name: 'svc-bench',
    });
    // A connection dropped by the server after connecting must not be an unhandled 'error' event.
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Connects once; resolves with the server's version line (throws when it is unreachable). */
  async check(): Promise<string> {
    return this.withClient(async (c) => {
      const r = await c.query<{ v: string }>('SELECT version() AS v');
      return (r.rows[0]?.v ?? '?').replace(/ on .*$/, '');
    });
  }

  /**
   * A database URL for `target` on a schema of its own. Drops any schema left
   * over under that name (an earlier run with the same pid and --keep); svc
   * creates it again when it migrates.
   */
  async fresh(target: string): Promise<{ schema: string; url: string; leftover: boolean }> {
    const schema = this.schemaOf(target);
    const leftover = await this.withClient(async (c) => {
      const r = await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      if (r.rowCount) await c.query(`DROP SCHEMA IF EXISTS ${quote(schema)} CASCADE`);
      return (r.rowCount ?? 0) > 0;
    });
    this.live.add(schema);
    return { schema, url: withSchema(this.baseUrl, schema), leftover };
  }

  /** Drops `schema` (unless --keep); resolves with a note when it could not, or kept it. */
  async drop(schema: string): Promise<string | null> {
    if (!this.live.has(schema)) return null;
    if (this.keep) return `schema ${schema} kept (--keep)`;
    try {
      await this.withClient((c) => c.query(`DROP SCHEMA IF EXISTS ${quote(schema)} CASCADE`));
      this.live.delete(schema);
      return null;
    } catch (err) {
      return `could not drop schema ${schema}: ${(err as Error).message}`;
    }
  }

  /** Drops every schema of this run still there; resolves with the notes of those it could not drop. */
  async dropAll(): Promise<string[]> {
    const notes: string[] = [];
    for (const s of [...this.live]) {
      const n = await this.drop(s);
      if (n) notes.push(n);
    }
    return notes;
  }

  /** Schemas of this run not dropped yet. */
  get remaining(): string[] {
    return [...this.live];
  }
}
