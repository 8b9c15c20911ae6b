/**
 * CPU of GET /profile's handler path without HTTP (never part of the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/pulse-handler.ts DATA_DIR BUILD... PASSES
 *
 * DATA_DIR: a data directory of pulse-cpu.ts (--keep; its bench.json names site and key). Each BUILD is a
 * built checkout (its dist/): all are loaded in this one process, each with its own store, and answer the
 * same 3,000 random look-ups through pulse.answerProfile with a stand-in response, in blocks of 250
 * alternating between builds, so that a busy host weighs on each alike. Prints CPU µs per request
 * (process.cpuUsage over each block; the first pass is warm-up), the paired ratio of two builds, and
 * checks that every build answered the same bytes.
 */
import path from 'node:path';
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { Database } from '../../src/store/sqlite-driver.js';
const dir = process.argv[2]!;
const roots = process.argv.slice(3, -1).map((r) => path.resolve(r));
const passes = +process.argv[process.argv.length - 1]!;
const { key, siteId } = JSON.parse(readFileSync(path.join(dir, 'bench.json'), 'utf8'));
const ro = new Database(path.join(dir, 'svc.db'), { readonly: true });
const rows = ro.prepare("SELECT i.kind, i.value FROM identities i WHERE i.site_id = ? AND i.kind IN ('visitor','email','external_id') ORDER BY random() LIMIT 3000").all(siteId) as { kind: string; value: string }[];
ro.close();
const paths = rows.map((r) => `/api/pulse/v1/profile?${r.kind === 'visitor' ? 'visitor_id' : r.kind}=${encodeURIComponent(r.value)}`);
const apis: { root: string; api: { answerProfile: (...a: unknown[]) => boolean }; us: number[] }[] = [];
for (const root of roots) {
  const { openStore } = await import(path.join(root, 'dist/store/store.js'));
  const { createPulseApi } = await import(path.join(root, 'dist/pulse/router.js'));
  const store = openStore({ dataDir: dir, offThreadFsync: true });
  apis.push({ root, api: createPulseApi(store, { allowPrivateDestinations: false, rateLimit: false }, pino({ level: 'warn' })), us: [] });
}
const headers = { host: '127.0.0.1', authorization: `Bearer ${key}` };
const bodies = new Map<string, string>();
function one(api: { answerProfile: (...a: unknown[]) => boolean }, url: string): Promise<string> {
  return new Promise((resolve) => {
    const res = {
      statusCode: 0, headersSent: false, h: {} as Record<string, unknown>,
      setHeader(k: string, v: unknown) { this.h[k] = v; },
      writeHead(s: number, h: Record<string, unknown>) { this.statusCode = s; Object.assign(this.h, h); return this; },
      end(t: string | Buffer) { const s = typeof t === 'string' ? t : t.toString('utf8'); if (this.statusCode !== 200) console.log(this.statusCode, s); resolve(s); },
    };
    api.answerProfile({ method: 'GET', headers, url } as never, res as never, url);
  });
}
const BLOCK = 250;
for (let pass = 0; pass < passes; pass++) {
  for (let b = 0; b < paths.length; b += BLOCK) {
    const order = (b / BLOCK) % 2 === 0 ? apis : [...apis].reverse();
    for (const a of order) {
      const t = process.cpuUsage();
      for (const p of paths.slice(b, b + BLOCK)) {
        const body = await one(a.api, p);
        if (pass === 0) { const prev = bodies.get(p); if (prev === undefined) bodies.set(p, body); else if (prev !== body) throw new Error(`bytes differ for ${p}`); }
      }
      const d = process.cpuUsage(t);
      if (pass > 0) a.us.push((d.user + d.system) / BLOCK);
    }
  }
}
for (const a of apis) {
  const s = [...a.us].sort((x, y) => x - y);
  console.log(`${a.root}: median ${s[s.length >> 1]!.toFixed(1)} mean ${(s.reduce((x, y) => x + y, 0) / s.length).toFixed(1)} us/req over ${s.length} blocks of ${BLOCK}`);
}
if (apis.length === 2) { const r = apis[1]!.us.map((u, i) => u / apis[0]!.us[i]!).sort((x, y) => x - y); console.log(`paired ratio ${apis[1]!.root} / ${apis[0]!.root}: median ${r[r.length >> 1]!.toFixed(3)} (quartiles ${r[r.length >> 2]!.toFixed(3)}-${r[(3 * r.length) >> 2]!.toFixed(3)})`); }
console.log(`bodies compared: ${bodies.size} identical across builds`);
