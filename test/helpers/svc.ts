import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { backendEnv, pgLater, PG_BASE_URL, schemaFor } from './backend.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'bin/svc.js');

export function tempDir(prefix = 'svc-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** The `--data DIR` of an svc command line, to point the command at that directory's store. */
function dataDirOf(args: string[]): string | undefined {
  const i = args.indexOf('--data');
  return i >= 0 ? args[i + 1] : undefined;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built svc binary synchronously. */
export function cli(args: string[], opts: { env?: Record<string, string>; input?: string | Buffer } = {}): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...backendEnv(dataDirOf(args) ?? opts.env?.SVC_DATA_DIR), ...opts.env },
    input: opts.input,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Runs the built svc binary without blocking the event loop (for commands that talk to an in-process receiver). */
export function cliAsync(args: string[], opts: { env?: Record<string, string> } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...backendEnv(dataDirOf(args) ?? opts.env?.SVC_DATA_DIR), ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Runs svc and parses its --json output, failing loudly on a non-zero exit. */
export function cliJson<T = unknown>(args: string[], env?: Record<string, string>): T {
  const r = cli([...args, '--json'], { env });
  if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

export function createSite(dataDir: string, name = 'Test shop'): string {
  return cliJson<{ site_id: string }>(['site', 'create', '--name', name, '--data', dataDir]).site_id;
}

export interface Stats {
  site_id: string;
  profiles: number;
  sessions: number;
  events: number;
  scores: number;
  conversions: number;
  leads: number;
  outbox_pending: number;
  outbox_done: number;
}

export function stats(dataDir: string, siteId: string): Stats {
  return cliJson<Stats>(['stats', '--site', siteId, '--data', dataDir]);
}

export interface Svc {
  url: string;
  dataDir: string;
  /** The name it holds work-lane leases under (lane_leases.holder). */
  instance: string;
  proc: ChildProcess;
  stderr: () => string;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop: () => Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill: () => Promise<void>;
}

/** Starts `svc serve --port 0` (or `svc demo`) as a child process and waits for its listening line. */
export async function startSvc(
  opts: {
    dataDir?: string;
    env?: Record<string, string>;
    args?: string[];
    command?: 'serve' | 'demo';
    /**
     * Run svc under a parent that never reaps it: after kill() it stays a zombie (as a process killed just
     * before a restart is for a moment), and `kill(pid, 0)` still finds it; stop() then ends that parent.
     */
    unreaped?: boolean;
  } = {},
): Promise<Svc> {
  const dataDir = opts.dataDir ?? tempDir();
  const argv = [BIN, opts.command ?? 'serve', '--port', '0', '--data', dataDir, ...(opts.args ?? [])];
  const [cmd, cmdArgs] = opts.unreaped
    ? ['sh', ['-c', '"$0" "$@" & exec sleep 3600', process.execPath, ...argv]]
    : [process.execPath, argv];
  const proc = spawn(cmd, cmdArgs, {
    cwd: ROOT,
    // No drain delay on SIGTERM unless a test asks for one: stop() would otherwise wait 5 s for a balancer that is not there.
    // The per-token MCP limit is lifted unless a test sets it: a file's tests share one token on one server, and on a
    // fast host they make more calls than the default burst (120) before the bucket refills (the limit itself is
    // tested on servers started with their own SVC_MCP_RATE/SVC_MCP_BURST).
    env: {
      ...process.env,
      SVC_LOG_LEVEL: 'warn',
      SVC_SHUTDOWN_DRAIN_MS: '0',
      SVC_MCP_RATE: '1000000',
      SVC_MCP_BURST: '1000000',
      ...backendEnv(dataDir),
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  let instance = '';
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`svc did not start: ${err}`)), 20_000);
    // Ready once stdout has the listening line and stderr the instance line (written just before it).
    const check = () => {
      const m = /svc listening on (http:\/\/\S+)/.exec(out);
      const i = /svc instance (\S+)/.exec(err);
      if (m && i) {
        instance = i[1]!;
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    proc.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      check();
    });
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      check();
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svc exited with ${code}: ${err}`));
    });
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    url,
    dataDir,
    instance,
    proc,
    stderr: () => err,
    stop: async () => {
      proc.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      if (!opts.unreaped) {
        proc.kill('SIGKILL');
        await exited;
        return;
      }
      const pid = Number(/:(\d+)$/.exec(instance)![1]);
      process.kill(pid, 'SIGKILL');
      for (let i = 0; i < 500 && !isZombie(pid); i++) await new Promise((r) => setTimeout(r, 20));
      if (!isZombie(pid)) throw new Error(`svc ${pid} did not become a zombie`);
    },
  };
}

/** Whether a process has exited but not been reaped (Linux /proc). */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false;
  }
}

/** Removes a test's data directory and, on PostgreSQL, its schema (dropped while the tests go on: see pgLater). */
export function cleanup(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  if (PG_BASE_URL !== undefined) pgLater(PG_BASE_URL, `DROP SCHEMA IF EXISTS "${schemaFor(dir)}" CASCADE`);
}

/** POSTs JSON (or a raw string) and returns status, headers and parsed body. */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the raw text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}
