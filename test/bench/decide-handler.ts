/**
 * CPU of GET /api/decide's handler path on SQLite without HTTP (never part of the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/decide-handler.ts BUILD... [--passes 4] [--concurrency 16]
 *
 * Each BUILD is a built checkout (its dist/). bench:decide's site is seeded once (with the first build's
 * store) and its data directory copied for every other build, so every build holds the same ids. All builds
 * are loaded in this one process, each with its own store (synchronous=full, fsync off the event loop, as
 * `svc serve`), and answer the same 4,096 (visitor, URL) requests of bench:decide through handleDecide with a
 * stand-in request and response, `concurrency` in flight, in blocks of 256 alternating between builds (the
 * order flipped every block), so that a busy host weighs on each alike. Prints CPU µs per request
 * (process.cpuUsage over each block: every thread of the process, the writer's commits and fsyncs included;
 * the first pass is warm-up and gives every visitor its test's first arm), the paired ratio of two builds,
 * checks that every build answered the same bytes for the same request and pass, and that each stored
 * exactly one exposure per zone answered. Run under callgrind (one build; `valgrind --tool=callgrind
 * --callgrind-out-file=DIR/x-%p node …`) with SVC_BENCH_CALLGRIND_DIR=DIR, it zeroes the counters after the
 * warm-up pass and prints instructions per request of the measured passes.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { PAGES, ZONES_PER_PAGE, seedDecideSite } from './lib/decide-site.js';
import { callgrindInstructions } from './lib/callgrind.js';

const { values, positionals } = parseArgs({ options: { passes: { type: 'string' }, concurrency: { type: 'string' } }, allowPositionals: true });
const roots = positionals.map((r) => path.resolve(r));
const passes = Number(values.passes ?? 4);
const concurrency = Number(values.concurrency ?? 16);
if (roots.length === 0 || !(passes >= 2 && passes <= 100) || !(concurrency >= 1 && concurrency <= 256)) {
  process.stdout.write('usage: decide-handler.ts BUILD... [--passes 2..100] [--concurrency 1..256]\n');
  process.exit(2);
}

type Handler = (deps: unknown, req: unknown, res: unknown) => Promise<void>;
interface Build {
  root: string;
  dir: string;
  store: { close(): Promise<void>; sql: { get<T>(q: string, p: unknown[]): Promise<T> }; writeCounters?: { batches: number; ops: number } };
  handle: Handler;
  deps: unknown;
  us: number[];
  answered: number;
}

const VISITORS = 10_000;
const PAIRS = 4096;
const seedDir = mkdtempSync(path.join(os.tmpdir(), 'svc-decide-handler-'));
let siteId = '';
{
  const { openStore } = await import(path.join(roots[0]!, 'dist/store/store.js'));
  const store = openStore({ dataDir: seedDir });
  siteId = (await store.write((tx: { sites: { create(x: object): Promise<{ id: string }> } }) => tx.sites.create({ name: 'decide-handler' }))).id;
  await seedDecideSite(store, siteId);
  await store.close();
}
const builds: Build[] = [];
for (const root of roots) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-decide-handler-'));
  cpSync(seedDir, dir, { recursive: true });
  const { openStore } = await import(path.join(root, 'dist/store/store.js'));
  const { handleDecide } = await import(path.join(root, 'dist/ingest/decide.js'));
  const { decisionService } = await import(path.join(root, 'dist/domain/web/decisions.js'));
  const { IngestionService } = await import(path.join(root, 'dist/domain/ingestion/service.js'));
  const { SegmentMembership } = await import(path.join(root, 'dist/domain/segments/membership.js'));
  const { OriginPolicy } = await import(path.join(root, 'dist/ingest/origins.js'));
  const store = openStore({ dataDir: dir, offThreadFsync: true });
  const deps = {
    decisions: decisionService(store),
    ingestion: new IngestionService(store, new SegmentMembership(store)),
    ipLimiter: null,
    siteLimiter: null,
    trustProxy: false,
    origins: new OriginPolicy(store, false),
    onUnexpected: (err: unknown) => console.error('unexpected', err),
  };
  builds.push({ root, dir, store, handle: handleDecide, deps, us: [], answered: 0 });
}

const urls: string[] = [];
for (let i = 0; i < PAIRS; i++) {
  const p = i % PAGES;
  const url = p % 2 === 0 ? `https://shop.example/p${p}?utm_source=bench` : `https://shop.example/p${p}/item-${i}`;
  urls.push(`/api/decide?site_id=${siteId}&visitor_id=bv-${(i * 7919) % VISITORS}&url=${encodeURIComponent(url)}`);
}
const headers = { host: '127.0.0.1:8080', 'user-agent': 'bench' };
const socket = { remoteAddress: '127.0.0.1' };

function one(b: Build, url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = { method: 'GET', url, headers, socket, httpVersion: '1.1', resume() {} };
    const res = {
      req,
      statusCode: 0,
      headersSent: false,
      writableEnded: false,
      destroyed: false,
      h: {} as Record<string, unknown>,
      setHeader(k: string, v: unknown) {
        this.h[k] = v;
      },
      getHeader(k: string) {
        return this.h[k];
      },
      writeHead(s: number, h?: Record<string, unknown>) {
        this.statusCode = s;
        if (h) Object.assign(this.h, h);
        this.headersSent = true;
        return this;
      },
      end(t: string | Buffer) {
        const s = typeof t === 'string' ? t : Buffer.from(t).toString('utf8');
        if (this.statusCode !== 200) console.error(this.statusCode, s);
        resolve(s);
      },
    };
    void b.handle(b.deps, req, res);
  });
}

const BLOCK = 256;
const bodies = new Map<string, string>();
const callgrindDir = process.env.SVC_BENCH_CALLGRIND_DIR;
let measured = 0;
for (let pass = 0; pass < passes; pass++) {
  if (pass === 1 && callgrindDir) execFileSync('callgrind_control', ['-z', String(process.pid)], { stdio: 'ignore' });
  for (let start = 0; start < PAIRS; start += BLOCK) {
    const order = (start / BLOCK) % 2 === 0 ? builds : [...builds].reverse();
    for (const b of order) {
      let next = start;
      const end = start + BLOCK;
      const t = process.cpuUsage();
      const worker = async () => {
        while (next < end) {
          const i = next++;
          const body = await one(b, urls[i]!);
          b.answered++;
          const key = `${pass}\u0000${i}`;
          const prev = bodies.get(key);
          if (prev === undefined) bodies.set(key, body);
          else if (prev !== body) throw new Error(`bytes differ for pass ${pass} request ${i}:\n${prev}\n${body}`);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      const d = process.cpuUsage(t);
      if (pass > 0) {
        b.us.push((d.user + d.system) / BLOCK);
        measured += BLOCK;
      }
    }
  }
}
if (callgrindDir) console.log(`callgrind: ${(callgrindInstructions(callgrindDir, process.pid) / measured).toFixed(0)} instructions a request over ${measured}`);
for (const b of builds) {
  const s = [...b.us].sort((x, y) => x - y);
  const w = b.store.writeCounters;
  const perGroup = w && w.batches > 0 ? `; ${(w.ops / w.batches).toFixed(1)} write operations a group transaction` : '';
  console.log(`${b.root}: median ${s[s.length >> 1]!.toFixed(1)} mean ${(s.reduce((x, y) => x + y, 0) / s.length).toFixed(1)} µs/request over ${s.length} blocks of ${BLOCK}${perGroup}`);
}
if (builds.length === 2) {
  const r = builds[1]!.us.map((u, i) => u / builds[0]!.us[i]!).sort((x, y) => x - y);
  console.log(`paired ratio ${builds[1]!.root} / ${builds[0]!.root}: median ${r[r.length >> 1]!.toFixed(3)} (quartiles ${r[r.length >> 2]!.toFixed(3)}-${r[(3 * r.length) >> 2]!.toFixed(3)})`);
}
console.log(`bodies compared: ${bodies.size} (request, pass) answers identical across builds`);
let failed = false;
for (const b of builds) {
  const n = Number((await b.store.sql.get<{ n: number }>('SELECT count(*) AS n FROM exposures', [])).n);
  if (n !== b.answered * ZONES_PER_PAGE) {
    console.error(`${b.root}: ${n} exposures stored for ${b.answered} answers`);
    failed = true;
  }
  await b.store.close();
  rmSync(b.dir, { recursive: true, force: true });
}
rmSync(seedDir, { recursive: true, force: true });
if (!failed) console.log('exposures stored: one per zone answered, every build');
process.exit(failed ? 1 : 0);
