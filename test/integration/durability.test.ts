import { describe, expect, it } from 'vitest';
import { cleanup, createSite, post, startSvc, stats, tempDir } from '../helpers/svc.js';
import { query } from '../helpers/db.js';

interface Outcome {
  acked: Set<number>;
  rejected: Set<number>;
  sent: Set<number>;
}

/** Runs `workers` concurrent request loops until `stop()`; each request carries a sequence number. */
function stream(url: string, site: string, workers: number) {
  const out: Outcome = { acked: new Set(), rejected: new Set(), sent: new Set() };
  let running = true;
  let seq = 0;
  const loops = Array.from({ length: workers }, async () => {
    while (running && seq < 50_000) {
      const n = seq++;
      const invalid = n % 7 === 3;
      const isConvert = n % 5 === 0;
      out.sent.add(n);
      try {
        const r = isConvert
          ? await post(`${url}/api/convert`, { site_id: site, session_id: `k-${n}`, revenue: invalid ? -1 : n })
          : await post(`${url}/api/events`, invalid ? { site_id: site, session_id: `k-${n}`, seq: n } : { site_id: site, session_id: `k-${n % 50}`, type: 'pageview', seq: n });
        if (r.status === 201) out.acked.add(n);
        else if (r.status === 400) out.rejected.add(n);
        else throw new Error(`unexpected status ${r.status}`);
      } catch (err) {
        if ((err as Error).message.startsWith('unexpected')) throw err;
        running = false; // the server is gone
      }
    }
  });
  return {
    out,
    get acks() {
      return out.acked.size;
    },
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
    done: Promise.all(loops),
  };
}

function storedSeqs(dataDir: string): { events: Set<number>; conversions: Set<number> } {
  const events = query<{ seq: number }>(dataDir, "SELECT json_extract(body, '$.seq') AS seq FROM events").map((r) => r.seq);
  const conversions = query<{ session_id: string }>(dataDir, 'SELECT session_id FROM conversions').map((r) => Number(r.session_id.slice(2)));
  return { events: new Set(events), conversions: new Set(conversions) };
}

describe('nothing acknowledged is lost', () => {
  it('keeps every acknowledged request and no rejected one across SIGKILL', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const svc = await startSvc({ dataDir });
    const s = stream(svc.url, site, 24);
    const deadline = Date.now() + 20_000;
    while (s.acks < 400 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await svc.kill(); // mid-stream: requests are in flight
    await s.done;
    const { acked, rejected, sent } = s.out;
    expect(acked.size).toBeGreaterThanOrEqual(400);
    expect(rejected.size).toBeGreaterThan(0);

    const again = await startSvc({ dataDir });
    const st = stats(dataDir, site);
    await again.stop();
    const stored = storedSeqs(dataDir);
    for (const n of acked) {
      if (n % 5 === 0) expect(stored.conversions.has(n), `conversion ${n}`).toBe(true);
      else expect(stored.events.has(n), `event ${n}`).toBe(true);
    }
    for (const n of rejected) {
      expect(stored.events.has(n)).toBe(false);
      expect(stored.conversions.has(n)).toBe(false);
    }
    for (const n of [...stored.events, ...stored.conversions]) expect(sent.has(n)).toBe(true);
    const ackedEvents = [...acked].filter((n) => n % 5 !== 0).length;
    const ackedConversions = acked.size - ackedEvents;
    // Requests in flight at the kill may or may not have landed; nothing acknowledged is missing.
    expect(st.events).toBeGreaterThanOrEqual(ackedEvents);
    expect(st.conversions).toBeGreaterThanOrEqual(ackedConversions);
    expect(st.events + st.conversions - acked.size).toBeLessThanOrEqual(24);
    cleanup(dataDir);
  });

  it('finishes in-flight requests and flushes writes on SIGTERM, then exits 0', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const svc = await startSvc({ dataDir });
    const s = stream(svc.url, site, 16);
    while (s.acks < 200) await new Promise((r) => setTimeout(r, 10));
    const code = await svc.stop();
    await s.done;
    expect(code).toBe(0);
    const stored = storedSeqs(dataDir);
    const st = stats(dataDir, site);
    for (const n of s.out.acked) expect(n % 5 === 0 ? stored.conversions.has(n) : stored.events.has(n)).toBe(true);
    expect(st.events + st.conversions).toBe(s.out.acked.size);
    cleanup(dataDir);
  });
});
