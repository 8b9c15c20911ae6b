/**
 * Request/response over the IPC channel of a forked helper process (the
 * webhook receiver and the webhook load generator run in their own processes
 * so that none of them shares an event loop with svc or with the
 * orchestrator). Every request is bounded in time; a helper exits when its
 * parent goes away.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ChildRegistry } from './child.js';

const REGISTER_HREF = pathToFileURL(fileURLToPath(new URL('../register.mjs', import.meta.url))).href;

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };
type FromWorker = { type: 'ready' } | ({ type: 'reply' } & Reply);

export interface IpcWorker {
  child: ChildProcess;
  pid: number | undefined;
  /** Sends `message` and resolves with the worker's answer; rejects after `timeoutMs` or when the worker dies. */
  request<T>(message: Record<string, unknown>, timeoutMs: number): Promise<T>;
  /** Disconnects; the worker exits on its own (SIGKILL after 2 s otherwise). */
  close(): void;
}

/** Forks `file` (a TypeScript module run through register.mjs) and waits, at most `readyMs`, for its ready message. */
export function forkWorker(registry: ChildRegistry, file: string, name: string, readyMs = 20_000): Promise<IpcWorker> {
  const child = registry.add(fork(file, [], { execArgv: ['--import', REGISTER_HREF], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  const failAll = (why: string) => {
    for (const [id, p] of pending) {
      clearTimeout(p.timer);
      pending.delete(id);
      p.reject(new Error(`${name}: ${why}`));
    }
  };
  child.once('exit', (code, signal) => failAll(`exited (code ${code}, signal ${signal})`));
  const worker: IpcWorker = {
    child,
    pid: child.pid,
    request<T>(message: Record<string, unknown>, timeoutMs: number): Promise<T> {
      if (!child.connected) return Promise.reject(new Error(`${name}: not connected`));
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`${name}: no answer to ${String(message.type)} within ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
        child.send({ ...message, id });
      });
    },
    close() {
      if (child.connected) child.disconnect();
      if (child.exitCode === null && child.signalCode === null) setTimeout(() => child.kill('SIGKILL'), 2_000).unref();
    },
  };
  return new Promise<IpcWorker>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name}: not ready within ${readyMs} ms`));
    }, readyMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name}: exited before it was ready (code ${code}, signal ${signal})`));
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('message', (m: FromWorker) => {
      if (m.type === 'ready') {
        clearTimeout(timer);
        resolve(worker);
        return;
      }
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.ok) p.resolve(m.value);
      else p.reject(new Error(`${name}: ${m.error}`));
    });
  });
}

/** Whether the module at `moduleUrl` is the entry point of this process. */
export function isEntryPoint(moduleUrl: string): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/**
 * The worker side: answers every request with `handle`, announces readiness,
 * and exits when the parent disconnects (or after `lifetimeMs`, a last resort).
 */
export function serveRequests(handle: (message: { type: string } & Record<string, unknown>) => Promise<unknown> | unknown, lifetimeMs: number): void {
  if (!process.send) throw new Error('not started with an IPC channel');
  const send = (m: FromWorker) => process.send!(m);
  process.on('disconnect', () => process.exit(0));
  setTimeout(() => process.exit(3), lifetimeMs).unref();
  process.on('message', (m: { id: number; type: string } & Record<string, unknown>) => {
    Promise.resolve()
      .then(() => handle(m))
      .then(
        (value) => send({ type: 'reply', id: m.id, ok: true, value }),
        (err: unknown) => send({ type: 'reply', id: m.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
      );
  });
  send({ type: 'ready' });
}
