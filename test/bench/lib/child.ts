import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * Every child process the benchmark starts, so that all of them are killed
 * whatever way the run ends (normal end, error, SIGINT/SIGTERM).
 */
export class ChildRegistry {
  private readonly children = new Set<ChildProcess>();

  add(child: ChildProcess): ChildProcess {
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    return child;
  }

  /** Sends `signal` to every child still running (synchronous, safe in an 'exit' handler). */
  killAll(signal: NodeJS.Signals = 'SIGKILL'): void {
    for (const child of this.children) {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          child.kill(signal);
        } catch {
          // already gone
        }
      }
    }
  }

  get size(): number {
    return this.children.size;
  }
}

/** Keeps the last `max` characters written to a stream, and counts lines that match `errorPattern`. */
export class Tail {
  private text = '';
  errorLines = 0;
  private partial = '';

  constructor(
    private readonly max = 16 * 1024,
    private readonly errorPattern: RegExp | null = null,
  ) {}

  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.max);
    if (this.errorPattern) {
      const lines = (this.partial + chunk).split('\n');
      this.partial = (lines.pop() ?? '').slice(-this.max);
      for (const line of lines) if (this.errorPattern.test(line)) this.errorLines++;
    }
  }

  toString(): string {
    return this.text;
  }

  lastLines(n: number): string {
    return this.text.trimEnd().split('\n').slice(-n).join('\n');
  }
}

export interface SpawnedServer {
  child: ChildProcess;
  /** The first capture group of the ready line (the URL). */
  url: string;
  stderr: Tail;
}

/**
 * Starts a server process and waits (at most `timeoutMs`) for the stdout line
 * matching `ready`. stdout and stderr are drained for the whole life of the
 * child so a chatty server never blocks on a full pipe.
 */
export function spawnServer(
  registry: ChildRegistry,
  opts: {
    name: string;
    command: string;
    args: string[];
    env?: NodeJS.ProcessEnv;
    cwd?: string;
    ready: RegExp;
    timeoutMs?: number;
    errorPattern?: RegExp;
  },
): Promise<SpawnedServer> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const child = registry.add(
    spawn(opts.command, opts.args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  const stderr = new Tail(16 * 1024, opts.errorPattern ?? null);
  const stdout = new Tail(4 * 1024);
  child.stderr!.setEncoding('utf8').on('data', (c: string) => stderr.push(c));
  return new Promise<SpawnedServer>((resolve, reject) => {
    let buffered = '';
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      const tail = stderr.lastLines(20);
      reject(new Error(`${opts.name}: ${why}${tail ? `\n--- last stderr lines ---\n${tail}` : ''}`));
    };
    const timer = setTimeout(() => fail(`no ready line within ${timeoutMs} ms`), timeoutMs);
    child.once('error', (err) => fail(`could not start: ${err.message}`));
    child.once('exit', (code, signal) => fail(`exited before it was ready (code ${code}, signal ${signal})`));
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      stdout.push(c);
      if (settled) return;
      buffered += c;
      if (buffered.length > 64 * 1024) {
        fail('printed 64 KiB on stdout without a ready line');
        return;
      }
      for (const line of buffered.split('\n')) {
        const m = opts.ready.exec(line.trim());
        if (m) {
          settled = true;
          clearTimeout(timer);
          resolve({ child, url: m[1] ?? m[0], stderr });
          return;
        }
      }
    });
  });
}

/**
 * Stops a child: SIGTERM, then SIGKILL after `graceMs`. Resolves with how it
 * ended; never waits longer than `graceMs` + 5 s.
 */
export function stopChild(
  child: ChildProcess,
  graceMs = 15_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; killed: boolean }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode, killed: false });
  }
  return new Promise((resolve) => {
    let killed = false;
    const hard = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, graceMs);
    const giveUp = setTimeout(() => resolve({ code: null, signal: null, killed: true }), graceMs + 5_000);
    child.once('exit', (code, signal) => {
      clearTimeout(hard);
      clearTimeout(giveUp);
      resolve({ code, signal, killed });
    });
    child.kill('SIGTERM');
  });
}

/** Runs a command to completion with a time limit; resolves with its exit code and output (each capped at 1 MiB). */
export function runCommand(
  registry: ChildRegistry,
  command: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = registry.add(
      spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    let stdout = '';
    let stderr = '';
    const cap = 1024 * 1024;
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      if (stdout.length < cap) stdout += c;
    });
    child.stderr!.setEncoding('utf8').on('data', (c: string) => {
      if (stderr.length < cap) stderr += c;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')}: no exit within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let clockTicks: number | undefined;

/**
 * CPU time a process has used so far, in ms (user + system; with `which: 'system'` the kernel's share alone: the
 * system calls, page faults and the writes of a store's pages); null where /proc is unavailable.
 */
export function processCpuMs(pid: number | undefined, which: 'all' | 'system' = 'all'): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "pid (comm) ", field 3 (state) is rest[0]; utime is field 14, stime field 15.
    const ticks = (which === 'all' ? Number(rest[11]) : 0) + Number(rest[12]);
    if (!Number.isFinite(ticks)) return null;
    if (clockTicks === undefined) {
      try {
        clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 2_000 }).trim()) || 100;
      } catch {
        clockTicks = 100;
      }
    }
    return (ticks * 1000) / clockTicks;
  } catch {
    return null;
  }
}

/** Host-wide CPU time so far, from /proc/stat (busy and total jiffies over all cores); null where /proc is unavailable. */
export function hostCpuTicks(): { busy: number; total: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already inside user/nice)
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
    const busy = user + nice + system + irq + softirq + steal;
    return { busy, total: busy + idle + iowait };
  } catch {
    return null;
  }
}

/** Busy share of all cores between two hostCpuTicks() readings, in % of the whole host (100% = every core busy). */
export function hostCpuPercent(a: { busy: number; total: number } | null, b: { busy: number; total: number } | null): number | null {
  if (!a || !b || b.total <= a.total) return null;
  return ((b.busy - a.busy) / (b.total - a.total)) * 100;
}

/**
 * CPU of a changing set of processes over a window: `start()` reads the CPU of
 * the processes `list()` names, `end()` reads them again and adds up what each
 * used in between (one that appeared meanwhile counts whole, one that ended
 * meanwhile is lost). Resolves null when `list()` named nothing.
 */
export class GroupCpu {
  private before = new Map<number, number>();
  private startedAt = 0;

  constructor(private readonly list: () => number[]) {}

  start(): this {
    this.startedAt = performance.now();
    this.before = new Map();
    for (const pid of this.list()) {
      const ms = processCpuMs(pid);
      if (ms !== null) this.before.set(pid, ms);
    }
    return this;
  }

  /** CPU used since start(), in % of one core; null when there was nothing to measure. */
  end(): number | null {
    const elapsed = performance.now() - this.startedAt;
    const pids = new Set([...this.before.keys(), ...this.list()]);
    let used = 0;
    let seen = 0;
    for (const pid of pids) {
      const ms = processCpuMs(pid);
      if (ms === null) continue;
      seen++;
      used += ms - (this.before.get(pid) ?? 0);
    }
    return seen > 0 && elapsed > 0 ? (used / elapsed) * 100 : null;
  }
}
