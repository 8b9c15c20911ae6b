import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { BIN, cleanup, cli, cliAsync, cliJson, post, tempDir } from '../helpers/svc.js';
import { buildProgram, main } from '../../src/cli/main.js';
import { execute } from '../helpers/db.js';
import { backendEnv, databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import { MIGRATE_LOCK } from '../../src/store/pg/store.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { PG_MIGRATIONS } from '../../src/store/pg/migrations.js';

describe('svc CLI', () => {
  it('creates and lists sites, in JSON and as a table', () => {
    const dir = tempDir();
    const { site_id } = cliJson<{ site_id: string }>(['site', 'create', '--name', 'Shop', '--domain', 'Shop.Example.com', '--data', dir]);
    expect(site_id).toMatch(/^site_[A-Za-z0-9_-]{16}$/);
    const plain = cli(['site', 'create', '--name', 'Blog', '--data', dir]);
    expect(plain.code).toBe(0);
    expect(plain.stdout.trim()).toMatch(/^site_/);
    const list = cliJson<{ site_id: string; name: string; domain: string | null }[]>(['site', 'list', '--data', dir]);
    expect(list.map((s) => s.name)).toEqual(['Shop', 'Blog']);
    expect(list[0]).toMatchObject({ site_id, domain: 'shop.example.com' });
    const table = cli(['site', 'list', '--data', dir]);
    expect(table.stdout.split('\n')[0]).toMatch(/^site_id\s+name\s+domain/);
    cleanup(dir);
  });

  it('migrates a data directory explicitly, once, and refuses one migrated by a newer svc', () => {
    const dir = tempDir();
    // Each store has its own migration list.
    const list = PG_BASE_URL === undefined ? MIGRATIONS : PG_MIGRATIONS;
    const latest = list[list.length - 1]!.version;
    expect(cliJson(['migrate', '--data', dir])).toEqual({ applied: list.map((m) => m.version), version: latest });
    expect(cliJson(['migrate', '--data', dir])).toEqual({ applied: [], version: latest });
    expect(cli(['migrate', '--data', dir]).stdout.trim()).toBe(`up to date at schema version ${latest}`);
    execute(dir, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 0)", latest + 1);
    for (const args of [['migrate'], ['site', 'list']]) {
      const r = cli([...args, '--data', dir]);
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(`svc: the database is at schema version ${latest + 1}, newer than this svc knows (${latest}): run the svc that migrated it, or a newer one`);
    }
    cleanup(dir);
  });

  it('reads the data directory from SVC_DATA_DIR', () => {
    const dir = tempDir();
    cli(['site', 'create', '--name', 'Env'], { env: { SVC_DATA_DIR: dir } });
    expect(cliJson<unknown[]>(['site', 'list', '--data', dir])).toHaveLength(1);
    cleanup(dir);
  });

  it('prints zero stats for a new site and fails with exit 1 for an unknown one', () => {
    const dir = tempDir();
    const { site_id } = cliJson<{ site_id: string }>(['site', 'create', '--name', 'S', '--data', dir]);
    expect(cliJson(['stats', '--site', site_id, '--data', dir])).toEqual({
      site_id,
      profiles: 0,
      sessions: 0,
      events: 0,
      scores: 0,
      conversions: 0,
      leads: 0,
      outbox_pending: 0,
      outbox_done: 0,
    });
    const r = cli(['stats', '--site', 'site_missing', '--data', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('svc: no site site_missing\n');
    cleanup(dir);
  });

  it('exits 2 on usage errors with one clear line and no stack trace', () => {
    for (const args of [
      ['site', 'create'],
      ['nope'],
      ['site', 'create', '--name', 'x', '--bogus'],
      ['stats', '--site'],
      ['site', 'create', '--name', 'x', '--domain', 'not a domain'],
      ['serve', '--port', 'abc'],
    ]) {
      const r = cli(args, { env: { SVC_DATA_DIR: tempDir() } });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/^svc: [^\n]+\n$/);
      expect(r.stdout).toBe('');
    }
  });

  it('says what a bad typed setting must be in one line of our words, naming the flag or the variable', () => {
    const dir = tempDir();
    const cases: [string[], Record<string, string>, string][] = [
      [['serve', '--port', 'abc'], {}, 'svc: --port: "abc" must be a whole number from 0 to 65535\n'],
      [['serve', '--port', '1.5'], {}, 'svc: --port: "1.5" must be a whole number from 0 to 65535\n'],
      [['serve', '--port', '70000'], {}, 'svc: --port: "70000" must be a whole number from 0 to 65535\n'],
      [['serve', '--host', ''], {}, 'svc: --host: "" must not be empty\n'],
      [['serve', '--database-url', 'mysql://u:secret@db/x'], {}, 'svc: --database-url: must be a postgres:// URL\n'],
      [['site', 'list'], { SVC_PORT: 'abc' }, 'svc: SVC_PORT: "abc" must be a whole number from 0 to 65535\n'],
      [['site', 'list'], { SVC_TRUST_PROXY: 'maybe' }, 'svc: SVC_TRUST_PROXY: "maybe" must be one of 0, 1, true, false, yes, no, on, off\n'],
      [['site', 'list'], { SVC_DATABASE_POOL_SIZE: '0' }, 'svc: SVC_DATABASE_POOL_SIZE: "0" must be a whole number from 1 to 1000\n'],
      [['site', 'list'], { SVC_LANE_LEASE_MS: '5' }, 'svc: SVC_LANE_LEASE_MS: "5" must be a whole number of at least 10000\n'],
      [['site', 'list'], { SVC_RETENTION_DAYS: '-1' }, 'svc: SVC_RETENTION_DAYS: "-1" must be a number above 0\n'],
      [['site', 'list'], { SVC_SQLITE_SYNCHRONOUS: 'fast' }, 'svc: SVC_SQLITE_SYNCHRONOUS: "fast" must be one of full, full-inline, normal\n'],
      [['site', 'list'], { SVC_SQLITE_CACHE_MB: '0' }, 'svc: SVC_SQLITE_CACHE_MB: "0" must be a whole number from 1 to 1048576\n'],
    ];
    for (const [args, env, stderr] of cases) {
      const r = cli([...args, '--data', dir], { env });
      expect({ code: r.code, stderr: r.stderr, stdout: r.stdout }, args.join(' ')).toEqual({ code: 2, stderr, stdout: '' });
    }
    cleanup(dir);
  });

  it('prints the help of a command group named without a subcommand on stderr and exits 2, like every usage error', async () => {
    for (const args of [[], ['webhooks']]) {
      const r = cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`Usage: svc ${args.join(' ')}`.trim());
    }
    // Every group of the tree, in process: help on stderr, exit 2. `svc help` and --help still exit 0.
    const groups: string[][] = [[]];
    const walk = (c: Command, pre: string[]) => {
      for (const sub of c.commands) {
        if (sub.commands.length > 0) groups.push([...pre, sub.name()]);
        walk(sub, [...pre, sub.name()]);
      }
    };
    walk(await buildProgram(), []);
    expect(groups.length).toBeGreaterThan(10);
    let err = '';
    let out = '';
    const spyErr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      err += String(chunk);
      return true;
    });
    const spyOut = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    try {
      for (const g of groups) {
        err = '';
        out = '';
        expect(await main(['node', 'svc', ...g]), g.join(' ')).toBe(2);
        expect(err, g.join(' ')).toContain(`Usage: svc ${g.join(' ')}`.trimEnd());
        expect(out, g.join(' ')).toBe('');
      }
      out = '';
      expect(await main(['node', 'svc', 'help', 'webhooks'])).toBe(0);
      expect(out).toContain('Usage: svc webhooks');
    } finally {
      spyErr.mockRestore();
      spyOut.mockRestore();
    }
  });

  it('has --help on every command of the tree, exiting 0', async () => {
    const paths: string[][] = [];
    const walk = (c: Command, pre: string[]) => {
      for (const sub of c.commands) {
        paths.push([...pre, sub.name()]);
        walk(sub, [...pre, sub.name()]);
      }
    };
    walk(await buildProgram(), []);
    expect(paths.length).toBeGreaterThan(40);
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    try {
      for (const p of paths) {
        out = '';
        expect(await main(['node', 'svc', ...p, '--help']), p.join(' ')).toBe(0);
        expect(out, p.join(' ')).toContain(`Usage: svc ${p.join(' ')}`);
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('serves from SVC_HOST, SVC_PORT and SVC_DATA_DIR, printing the real port when 0 is asked for', async () => {
    const dir = tempDir();
    const site = cliJson<{ site_id: string }>(['site', 'create', '--name', 'Env', '--data', dir]).site_id;
    const proc = spawn(process.execPath, [BIN, 'serve'], {
      env: { ...process.env, ...backendEnv(dir), SVC_HOST: '127.0.0.1', SVC_PORT: '0', SVC_DATA_DIR: dir, SVC_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      proc.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(out);
      });
      proc.once('exit', (code) => reject(new Error(`svc serve exited ${code}`)));
    });
    const m = /^svc listening on (http:\/\/127\.0\.0\.1:(\d+))\n$/.exec(line);
    expect(m).not.toBeNull();
    expect(Number(m![2])).toBeGreaterThan(0);
    const r = await post(`${m![1]}/api/events`, { site_id: site, session_id: 'env', type: 'pageview' });
    expect(r.status).toBe(201);
    proc.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(cliJson<{ events: number }>(['stats', '--site', site, '--data', dir]).events).toBe(1);
    cleanup(dir);
  });

  it('names a bad sslmode or an unreachable database in one line, on serve and the other commands', () => {
    const dir = tempDir();
    const bad = 'postgres://postgres@127.0.0.1:5432/test?sslmode=bogus';
    for (const args of [['serve', '--port', '0'], ['site', 'list'], ['migrate'], ['stats', '--site', 'site_x']]) {
      const flag = cli([...args, '--data', dir, '--database-url', bad]);
      const env = cli([...args, '--data', dir], { env: { SVC_DATABASE_URL: bad } });
      // Named as the user gave it; the URL itself (it may hold a password) is never repeated.
      expect({ code: flag.code, stderr: flag.stderr }, args.join(' ')).toEqual({ code: 2, stderr: 'svc: --database-url: sslmode must be one of disable, prefer, require, verify-ca, verify-full, no-verify\n' });
      expect({ code: env.code, stderr: env.stderr }, args.join(' ')).toEqual({ code: 2, stderr: 'svc: SVC_DATABASE_URL: sslmode must be one of disable, prefer, require, verify-ca, verify-full, no-verify\n' });
    }
    // Port 1 on loopback: nothing listens, the connection is refused.
    const down = 'postgres://postgres@127.0.0.1:1/test';
    for (const args of [['serve', '--port', '0'], ['site', 'list'], ['migrate'], ['webhooks', 'list', '--site', 'site_x']]) {
      const r = cli([...args, '--data', dir, '--database-url', down]);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toBe('svc: ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1\n');
    }
    cleanup(dir);
  });

  it.runIf(PG_BASE_URL !== undefined)('waits for another instance\u2019s migrations longer than the statement timeout', async () => {
    const dir = tempDir();
    const url = new URL(databaseUrlFor(dir));
    url.searchParams.set('application_name', 'svc-migrate-wait');
    const other = new pg.Client({ connectionString: PG_BASE_URL });
    await other.connect();
    try {
      // Another instance is migrating: it holds the migration lock.
      await other.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK]);
      const run = cliAsync(['site', 'list', '--json', '--data', dir], {
        env: { SVC_DATABASE_URL: url.toString(), SVC_DATABASE_STATEMENT_TIMEOUT_MS: '1000' },
      });
      const waiting = async () =>
        (
          await other.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = 'svc-migrate-wait'",
          )
        ).rows[0]!.n;
      const deadline = Date.now() + 30_000;
      while ((await waiting()) === 0) {
        if (Date.now() > deadline) throw new Error('the CLI never waited for the migration lock');
        await new Promise((r) => setTimeout(r, 50));
      }
      // Hold the lock past the 1 s statement timeout, then let it go.
      await new Promise((r) => setTimeout(r, 1_500));
      await other.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK]);
      const r = await run;
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([]);
    } finally {
      await other.end();
      cleanup(dir);
    }
  });

  it('has --help on every command and exits 0', () => {
    for (const args of [['--help'], ['serve', '--help'], ['site', '--help'], ['site', 'create', '--help'], ['stats', '--help']]) {
      const r = cli(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toContain('Usage: svc');
    }
  });
});
