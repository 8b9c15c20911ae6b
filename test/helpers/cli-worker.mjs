// The thread behind the in-process svc commands of the test helpers (cli in svc.ts): it loads the built CLI
// (dist/bundle/main.js, what bin/svc.js runs) once for the life of the test file and runs one command line
// per request through the same `main`, with the environment the spawned process would have had, its stdout and
// stderr captured and its exit code as bin/svc.js sets it. A command costs its own work instead of a node process
// (~0.22 s of CPU: start, module load). Request: { args, env }; reply on the port given at start:
// { code, stdout, stderr }, then it wakes the caller through `signal` (the blocking `cli`; the thread of `cliAsync`
// has none: its caller awaits the reply, and sends the next command only once it has it).
import { workerData } from 'node:worker_threads';

/** @type {{ port: import('node:worker_threads').MessagePort; requests: import('node:worker_threads').MessagePort; signal?: Int32Array; bundle: string; bin: string }} */
const { port, requests, signal, bundle, bin } = workerData;

const { main } = await import(bundle);

/** Collects what a command writes to one of its streams (process.stdout / process.stderr). */
function capture(stream) {
  const write = stream.write;
  let text = '';
  stream.write = (chunk, encoding, cb) => {
    text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    const done = typeof encoding === 'function' ? encoding : cb;
    if (typeof done === 'function') queueMicrotask(() => done());
    return true;
  };
  return {
    text: () => text,
    restore: () => {
      stream.write = write;
    },
  };
}

async function run({ args, env }) {
  // The environment is the spawned process's: exactly the one the caller built, nothing left from the last command.
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, env);
  process.exitCode = undefined;
  const out = capture(process.stdout);
  const err = capture(process.stderr);
  let code;
  try {
    // bin/svc.js: main's number is the exit code; a rejection is one `svc: …` line and exit 1.
    const r = await main([process.execPath, bin, ...args]);
    code = typeof r === 'number' ? r : (process.exitCode ?? 0);
  } catch (e) {
    process.stderr.write(`svc: ${e instanceof Error ? e.message : String(e)}\n`);
    code = 1;
  } finally {
    out.restore();
    err.restore();
    process.exitCode = undefined;
  }
  return { code, stdout: out.text(), stderr: err.text() };
}

requests.on('message', (req) => {
  run(req)
    .then(
      (reply) => port.postMessage(reply),
      (e) => port.postMessage({ code: 1, stdout: '', stderr: `svc: ${String(e?.message ?? e)}\n` }),
    )
    .finally(() => {
      if (signal === undefined) return;
      Atomics.store(signal, 0, 1);
      Atomics.notify(signal, 0);
    });
});
