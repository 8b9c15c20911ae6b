// The checks `npm test` runs before vitest, side by side instead of one after another: the type checks
// (src and tests; the browser tag), lint and the build. None reads what another writes (tsc and eslint
// check src/ and test/, the build writes dist/), so on two cores this takes about the longest one (eslint)
// instead of their sum. Each check's output is printed whole when it ends; the run fails, after all have
// ended, if any failed.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// npm puts node_modules/.bin on PATH for its scripts; run by hand (`node test/helpers/checks.mjs`) it is put there too.
const bin = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules', '.bin');
const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };

const checks = [
  ['eslint .', 'eslint', ['.']],
  ['tsc --noEmit', 'tsc', ['--noEmit']],
  // The build's emit only: `tsc --noEmit` above type-checks the same sources under the same options (and the tests),
  // so the build's own check would be the same work twice on two cores. `npm run build` (npm ci's prepare, the
  // benches) still checks while it emits.
  ['npm run build:emit', 'npm', ['run', 'build:emit']],
  ['tsc -p src/tag', 'tsc', ['-p', 'src/tag']],
];

const results = await Promise.all(
  checks.map(
    ([name, cmd, args]) =>
      new Promise((resolve) => {
        const started = Date.now();
        const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
        const out = [];
        p.stdout.on('data', (c) => out.push(c));
        p.stderr.on('data', (c) => out.push(c));
        p.on('error', (err) => out.push(Buffer.from(`${String(err)}\n`)));
        p.on('close', (code, signal) => {
          const text = Buffer.concat(out).toString();
          const status = code === 0 ? 'ok' : `failed (${signal ?? `exit ${code}`})`;
          process.stdout.write(`> ${name}: ${status} in ${((Date.now() - started) / 1000).toFixed(1)} s\n${text}${text && !text.endsWith('\n') ? '\n' : ''}`);
          resolve(code === 0);
        });
      }),
  ),
);
if (results.includes(false)) process.exitCode = 1;
