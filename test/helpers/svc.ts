import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { expect } from 'vitest';
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

/**
 * Commands `cli` runs in this process (test/helpers/cli-worker.mjs) rather than as a new one: the store
 * commands tests use to set up and read back (a site, a key, a token, a destination, stats …). Each runs
 * the built CLI's own `main` with the environment, arguments and working directory the process would have
 * had, and gives the same exit code, stdout and stderr; what it saves is the process (~0.22 s of CPU each).
 * Left out: commands that read stdin, talk to a network peer, log through pino (fd 2), or run for long
 * (serve, demo, verify, plugin/mcp, backup/restore, migrate, seed, recommend, webhooks test/replay), and
 * every command of the files whose subject is the svc process itself (SPAWNED_FILES).
 */
const IN_PROCESS: Record<string, readonly string[] | 'all'> = {
  site: 'all',
  stats: 'all',
  key: 'all',
  token: 'all',
  user: 'all',
  segment: 'all',
  accounts: 'all',
  webhooks: ['add', 'list', 'update', 'rotate-secret', 'remove', 'deliveries'],
  adplatform: ['add', 'list', 'update', 'remove', 'deliveries', 'jobs', 'retry'],
};

/** Test files about the svc command line as a process: every command they run is spawned. */
const SPAWNED_FILES = new Set([
  'cli.test.ts',
  'cli-missing-data.test.ts',
  'verify-cli.test.ts',
  'backup.test.ts',
  'file-modes.test.ts',
  'package.test.ts',
  'plugin-stdio.test.ts',
  'seed.test.ts',
  'recommend.test.ts',
  'recommend-catalogue.test.ts',
]);

/**
 * Commands `cliAsync` runs in this process besides those of IN_PROCESS: the ones that talk to a receiver of the
 * test's own event loop, which the blocking `cli` cannot run (it would stop the receiver it waits for). On the
 * thread of `cliAsync` the test's event loop goes on while the command runs.
 */
const IN_PROCESS_ASYNC: Record<string, readonly string[]> = {
  webhooks: ['test', 'replay'],
};

function inProcess(args: string[], input: string | Buffer | undefined, extra: Record<string, readonly string[]> = {}): boolean {
  if (input !== undefined || process.cwd() !== ROOT) return false;
  const more = extra[args[0] ?? ''];
  const listed = IN_PROCESS[args[0] ?? ''];
  const allowed = listed === 'all' || more === undefined ? listed : [...(listed ?? []), ...more];
  if (allowed === undefined) return false;
  if (allowed !== 'all' && !allowed.includes(args[1] ?? '')) return false;
  const file = expect.getState().testPath;
  return file !== undefined && !SPAWNED_FILES.has(path.basename(file));
}

const CLI_WORKER = path.join(ROOT, 'test/helpers/cli-worker.mjs');
const BUNDLE = pathToFileURL(path.join(ROOT, 'dist/bundle/main.js')).href;

/** The thread that runs this test file's in-process commands (cli-worker.mjs), started on first use. */
let cliThread: { worker: Worker; send: MessagePort; replies: MessagePort; signal: Int32Array } | undefined;

function cliWorker(): NonNullable<typeof cliThread> {
  if (cliThread !== undefined) return cliThread;
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const requests = new MessageChannel();
  const replies = new MessageChannel();
  const worker = new Worker(CLI_WORKER, {
    workerData: { port: replies.port2, requests: requests.port2, signal, bundle: BUNDLE, bin: BIN },
    transferList: [replies.port2, requests.port2],
  });
  // Neither the thread nor its ports keep a test process alive.
  worker.unref();
  replies.port1.unref();
  requests.port1.unref();
  cliThread = { worker, send: requests.port1, replies: replies.port1, signal };
  return cliThread;
}

/** One command on the in-process thread; blocks the caller as spawnSync does, with the same 30 s bound. */
export function cliInProcess(args: string[], env: Record<string, string | undefined>): CliResult {
  const t = cliWorker();
  Atomics.store(t.signal, 0, 0);
  t.send.postMessage({ args, env });
  if (Atomics.wait(t.signal, 0, 0, 30_000) === 'timed-out') {
    // Like spawnSync's timeout: the command is ended (its thread, here) and the result has no exit status.
    cliThread = undefined;
    void t.worker.terminate();
    return { code: -1, stdout: '', stderr: `svc ${args.join(' ')}: no answer in 30 s (in-process)` };
  }
  const reply = receiveMessageOnPort(t.replies)?.message as CliResult | undefined;
  if (reply === undefined) throw new Error(`svc ${args.join(' ')}: the in-process command thread sent no reply`);
  return reply;
}

/** Runs the built svc binary synchronously (store commands in-process: see IN_PROCESS). */
export function cli(args: string[], opts: { env?: Record<string, string>; input?: string | Buffer } = {}): CliResult {
  const env = cliEnv(args, opts.env);
  return inProcess(args, opts.input) ? cliInProcess(args, env) : cliSpawned(args, env, opts.input);
}

/** The environment an svc command line runs with: the test's, pointed at the store of its data directory. */
export function cliEnv(args: string[], env?: Record<string, string>): Record<string, string | undefined> {
  return { ...process.env, ...backendEnv(dataDirOf(args) ?? env?.SVC_DATA_DIR), ...env };
}

/** One command as a new node process running bin/svc.js. */
export function cliSpawned(args: string[], env: Record<string, string | undefined>, input?: string | Buffer): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env,
    input,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * The thread of this test file's `cliAsync` commands (cli-worker.mjs without a signal), apart from the blocking
 * `cli`'s: a blocking command may then run while an asynchronous one waits on the test's receiver. One command at
 * a time (a command's environment and streams are its thread's), in the order asked.
 */
let asyncThread: { worker: Worker; send: MessagePort; replies: MessagePort } | undefined;
let asyncQueue: Promise<unknown> = Promise.resolve();

function cliAsyncWorker(): NonNullable<typeof asyncThread> {
  if (asyncThread !== undefined) return asyncThread;
  const requests = new MessageChannel();
  const replies = new MessageChannel();
  const worker = new Worker(CLI_WORKER, {
    workerData: { port: replies.port2, requests: requests.port2, bundle: BUNDLE, bin: BIN },
    transferList: [replies.port2, requests.port2],
  });
  worker.unref();
  replies.port1.unref();
  requests.port1.unref();
  asyncThread = { worker, send: requests.port1, replies: replies.port1 };
  return asyncThread;
}

/** The bound of one `cliAsync` command in-process; a spawned one has the test's own timeout. */
const ASYNC_BOUND_MS = 60_000;

/** One command on the asynchronous in-process thread, once the commands asked before it have ended. */
export function cliInProcessAsync(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  const run = () =>
    new Promise<CliResult>((resolve, reject) => {
      const t = cliAsyncWorker();
      const timer = setTimeout(() => {
        t.replies.off('message', onReply);
        t.worker.off('error', onError);
        asyncThread = undefined;
        void t.worker.terminate();
        resolve({ code: -1, stdout: '', stderr: `svc ${args.join(' ')}: no answer in ${ASYNC_BOUND_MS / 1000} s (in-process)` });
      }, ASYNC_BOUND_MS);
      const done = () => {
        clearTimeout(timer);
        t.replies.off('message', onReply);
        t.worker.off('error', onError);
      };
      const onReply = (reply: CliResult) => {
        done();
        resolve(reply);
      };
      // The thread itself failed (the bundle would not load): no command runs on it any more.
      const onError = (e: Error) => {
        done();
        asyncThread = undefined;
        reject(e);
      };
      t.replies.on('message', onReply);
      t.worker.on('error', onError);
      t.send.postMessage({ args, env });
    });
  const result = asyncQueue.then(run, run);
  asyncQueue = result.catch(() => undefined);
  return result;
}

/**
 * Runs the built svc binary without blocking the event loop (for commands that talk to an in-process receiver):
 * the commands of IN_PROCESS and IN_PROCESS_ASYNC on this file's asynchronous thread, the rest as new processes.
 */
export function cliAsync(args: string[], opts: { env?: Record<string, string> } = {}): Promise<CliResult> {
  const env = cliEnv(args, opts.env);
  return inProcess(args, undefined, IN_PROCESS_ASYNC) ? cliInProcessAsync(args, env) : cliSpawnedAsync(args, env);
}

/** One command as a new node process running bin/svc.js, without blocking the event loop. */
export function cliSpawnedAsync(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env,
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
