import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { createFunnel, funnelReport, resolveCohort } from '../../src/domain/funnels/service.js';
import { runStallPass } from '../../src/domain/stall/pass.js';
import { isoWeekAt } from '../../src/domain/stall/week.js';
import { StallWorker } from '../../src/workers/stall.js';
import pino from 'pino';
import { validatePayload } from '../../src/webhooks/catalogue.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { FUNNEL_STEPS, seedStatements, stallSeed } from '../helpers/stall-seed.js';
import { openTestStore } from '../helpers/store.js';

let dir: string;
let store: Store;
let siteId: string;
let funnelId: string;
// A Wednesday afternoon in Berlin; the pass looks at its ISO week and the 4 before.
const AS_OF = Date.parse('2026-11-18T15:00:00Z');
const TZ = 'Europe/Berlin';

beforeAll(async () => {
  dir = tempDir('svc-stall-');
  store = await openTestStore(dir, { statementTimeoutMs: 60_000 });
  const site = await store.sites.create({ name: 'Stall shop' });
  siteId = site.id;
  await store.write((tx) => tx.sites.update(siteId, { timezone: TZ }));
  const weeks = [4, 3, 2, 1, 0].map((back) => isoWeekAt(AS_OF, TZ, back).start);
  const seed = stallSeed(siteId, weeks);
  await store.write(async (tx) => {
    for (const s of seedStatements(seed)) await tx.sql.run(s.sql, s.params);
  });
  funnelId = (await createFunnel(store, siteId, { name: 'Shop', steps: [...FUNNEL_STEPS] })).id;
});

afterAll(async () => {
  await store?.close();
  cleanup(dir);
});

// One scenario in steps over one seeded store: the passes after the first find what it filed. Kept in order even under
// --sequence.shuffle (each step states what the one before left).
describe('the stall pass on the store', { shuffle: false }, () => {
  it('reports the funnel in order within sessions, for all sessions and a cohort', async () => {
    const f = { id: funnelId, siteId, name: 'Shop', steps: [...FUNNEL_STEPS] as never, createdAt: 0, updatedAt: 0 };
    const week = isoWeekAt(AS_OF, TZ);
    const all = await funnelReport(store, f, week.start, week.end, null);
    // This week: 60 high-intent sessions (12 add to cart, 6 check out) and 60 others (36, 18).
    expect(all.sessions_scanned).toBe(120);
    expect(all.steps.map((s) => s.sessions)).toEqual([120, 48, 24]);
    expect(all.steps[1]!.overall_rate).toBeCloseTo(0.4, 10);
    expect(all.steps[2]!.step_rate).toBeCloseTo(0.5, 10);
    const hi = await funnelReport(store, f, week.start, week.end, resolveCohort('high_intent', []));
    expect(hi.steps.map((s) => s.sessions)).toEqual([60, 12, 6]);
    expect(hi.steps[1]!.step_rate).toBeCloseTo(0.2, 10);
  });

  it('finds the high-intent and Returning-buyers stall at add to cart, and nothing else', async () => {
    const r = await runStallPass(store, siteId, { asOf: AS_OF, pageSize: 37 });
    expect(r.isoWeek.label).toBe('2026-W47');
    expect(r.sessionsScanned).toBe(600);
    // Tested: steps 2 and 3 for the 3 cohorts, except step 3 of the two stalled ones this week (12 < 30 sessions).
    expect(r.tested).toBe(4);
    expect(r.filed.map((f) => f.cohort_key).sort()).toEqual(['high_intent', 'segment:seg_s_buyers']);
    for (const f of r.filed) {
      expect(f.step_position).toBe(2);
      expect(f.step_key).toBe('add_to_cart');
      expect(f.sessions).toBe(60);
      expect(f.stalled).toBe(48);
      expect(f.baseline_sessions).toBe(240);
      expect(f.baseline_stalled).toBe(96);
      expect(f.pass_rate).toBeCloseTo(0.2, 10);
      expect(f.baseline_pass_rate).toBeCloseTo(0.6, 10);
      expect(f.z).toBeCloseTo(5.547002, 5);
      // 24 sessions lost (0.4 x 60) x 25 revenue per session that passed the step (78 orders x 50 / 156).
      expect(f.value_per_week).toBe(600);
    }
    const outbox = await store.sql.all<{ payload: string }>("SELECT payload FROM outbox WHERE event_type = 'stall.found' AND site_id = ?", [siteId]);
    expect(outbox).toHaveLength(2);
    for (const row of outbox) {
      const p = validatePayload('stall.found', JSON.parse(row.payload));
      expect(p.success).toBe(true);
    }
    const inbox = await store.stall.inbox(siteId, 'pending', 10);
    expect(inbox).toHaveLength(2);
    const proposal = await store.stall.proposal(siteId, inbox[0]!.proposal_id!);
    // The cohort stalls on the product page (the step before add to cart): the test runs there.
    expect(proposal).toMatchObject({ page_match_type: 'glob', page_pattern: '/products/*' });
  });

  it('files nothing twice: again, and two passes at once', async () => {
    const again = await runStallPass(store, siteId, { asOf: AS_OF });
    expect(again.significant).toHaveLength(2);
    expect(again.filed).toHaveLength(0);
    const both = await Promise.all([runStallPass(store, siteId, { asOf: AS_OF }), runStallPass(store, siteId, { asOf: AS_OF })]);
    expect(both[0].filed.length + both[1].filed.length).toBe(0);
    const n = async (table: string) => Number((await store.sql.get<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE site_id = ?`, [siteId]))!.n);
    expect(await n('stall_findings')).toBe(2);
    expect(await n('inbox_items')).toBe(2);
    expect(await n('experiment_proposals')).toBe(2);
    expect(Number((await store.sql.get<{ n: number }>("SELECT count(*) AS n FROM outbox WHERE event_type = 'stall.found' AND site_id = ?", [siteId]))!.n)).toBe(2);
  });

  it('is quiet in a week without a stall, and a shorter baseline finds the same (already filed) stalls', async () => {
    // The week before: every cohort at its baseline rate.
    const quiet = await runStallPass(store, siteId, { asOf: isoWeekAt(AS_OF, TZ, 1).start + 1000 });
    expect(quiet.isoWeek.label).toBe('2026-W46');
    expect(quiet.filed).toHaveLength(0);
    // One baseline week (60 sessions per cohort reach step 1): the same four comparisons have enough samples.
    const short = await runStallPass(store, siteId, { asOf: AS_OF, baselineWeeks: 1 });
    expect(short.tested).toBe(4);
    expect(short.significant).toHaveLength(2);
    expect(short.filed).toHaveLength(0);
  });

  it('the weekly worker analyses the last completed week of each site once', async () => {
    const worker = new StallWorker(store, { intervalMs: 3_600_000, leaseMs: 30_000, logger: pino({ level: 'silent' }) });
    // The Monday after W47: the last completed week is W47, already analysed on demand (nothing new to file).
    const monday = isoWeekAt(AS_OF, TZ).end + 60_000;
    expect(await worker.pass(monday)).toBe(0);
    const runs = await store.sql.all<{ iso_week: string; findings: number }>('SELECT iso_week, findings FROM stall_runs WHERE site_id = ?', [siteId]);
    expect(runs).toEqual([{ iso_week: '2026-W47', findings: 0 }]);
    // Clear W47's findings: a second pass in the same week does not run again (the run is recorded).
    await store.write((tx) => tx.sql.run('DELETE FROM stall_findings WHERE site_id = ?', [siteId]));
    expect(await worker.pass(monday + 3_600_000)).toBe(0);
    expect(await store.sql.all('SELECT 1 FROM stall_findings WHERE site_id = ?', [siteId])).toHaveLength(0);
    await worker.stop();
  });
});
