// Bundles the CLI (and so `svc serve`) with its dependencies into dist/bundle/, after tsc has written dist/.
// Why: a cold `svc serve` spent about half of its start-up CPU opening, resolving and compiling some 1,000
// module files (node_modules and ours); from one bundle with a chunk per lazily loaded command it starts in
// about half the CPU. dist/index.js (the library entry) stays tsc's output with its dependencies external.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

// Chunk names carry a hash of their content: chunks of an earlier build would stay behind.
rmSync('dist/bundle', { recursive: true, force: true });

await build({
  entryPoints: {
    main: 'dist/cli/main.js',
    // A worker thread's file: new URL('./checkpoint-worker.js', import.meta.url) finds it beside the chunks.
    'checkpoint-worker': 'dist/store/checkpoint-worker.js',
  },
  outdir: 'dist/bundle',
  entryNames: '[name]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  // Native or optional modules, loaded from node_modules at run time when they are loaded at all.
  external: ['better-sqlite3', 'pg-native', 'pino-pretty', 'react-devtools-core', 'fsevents'],
  // CommonJS dependencies call require(); in an ES module it has to be made.
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
  // Less to parse at start (about a tenth of its CPU); names are kept, so stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
