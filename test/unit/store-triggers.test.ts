import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import type { TriggerRow } from '../../src/store/triggers.js';
import { createFire } from '../../src/domain/triggers/service.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * The frequency cap and quiet hours of a trigger over a real store (SQLite, and PostgreSQL in the pg
 * project): the cap window's edges, which fires count against it, and quiet hours read in the site's
 * time zone.
 */
let store: Store;
let dataDir: string;
let n = 0;
const HOUR = 3_600_000;
const t = (s: string) => Date.parse(s);

beforeAll(async () => {
  dataDir = tempDir();
  store = await openTestStore(dataDir, { poolSize: 2 });
});

afterAll(async () => {
  await store.close();
  cleanup(dataDir);
});

async function site(timezone: string): Promise<string> {
  return store.write(async (tx) => {
    const s = await tx.sites.create({ name: `Shop ${++n}` });
    await tx.sites.update(s.id, { timezone });
    return s.id;
  });
}

async function trigger(siteId: string, f: { cap_count: number; cap_hours: number; quiet?: [string, string] }): Promise<TriggerRow> {
  return store.write((tx) =>
    tx.triggers.create(
      `trg_${++n}`,
      siteId,
      {
        name: 'T',
        on_kind: 'event',
        on_value: 'demo_viewed',
        score_min: null,
        message_id: 'tpl',
        message_values: '{}',
        include_email: 0,
        cap_count: f.cap_count,
        cap_window_ms: f.cap_hours * HOUR,
        quiet_start: f.quiet?.[0] ?? null,
        quiet_end: f.quiet?.[1] ?? null,
      },
      'test',
      Date.now(),
    ),
  );
}

const fire = (tr: TriggerRow, profile: string, at: number, reason: 'event' | 'manual' = 'event') =>
  store.write((tx) => createFire(tx, tr, profile, reason, at, { by: 'test' }));
const capped = async (tr: TriggerRow) => Number((await store.write((tx) => tx.triggers.get(tr.site_id, tr.id)))!.capped_count);

describe('frequency cap', () => {
  it('holds a profile to cap_count fires in a rolling window whose start is exclusive; other profiles are not affected', async () => {
    const s = await site('Europe/Berlin');
    const tr = await trigger(s, { cap_count: 2, cap_hours: 24 });
    const t0 = t('2026-01-10T12:00:00Z');
    expect(await fire(tr, 'prf_a', t0)).not.toBeNull();
    expect(await fire(tr, 'prf_a', t0 + HOUR)).not.toBeNull();
    expect(await fire(tr, 'prf_a', t0 + 2 * HOUR)).toBeNull(); // third within 24 h
    expect(await fire(tr, 'prf_b', t0 + 2 * HOUR)).not.toBeNull();
    // One millisecond before the first fire leaves the window it is still inside; exactly 24 h later it is out.
    expect(await fire(tr, 'prf_a', t0 + 24 * HOUR - 1)).toBeNull();
    expect(await fire(tr, 'prf_a', t0 + 24 * HOUR)).not.toBeNull();
    expect(await capped(tr)).toBe(2);
  });

  it('counts deferred (quiet-hours) fires and fires by hand, but not cancelled ones; a fire by hand skips the cap', async () => {
    const s = await site('UTC');
    const tr = await trigger(s, { cap_count: 1, cap_hours: 48, quiet: ['22:00', '07:00'] });
    const night = t('2026-02-01T23:00:00Z');
    const deferred = (await fire(tr, 'prf_a', night))!;
    expect(deferred).toMatchObject({ deferred: 1 });
    expect(Number(deferred.due_at)).toBe(t('2026-02-02T07:00:00Z'));
    expect(await fire(tr, 'prf_a', night + HOUR)).toBeNull();
    expect(await fire(tr, 'prf_a', night + 2 * HOUR, 'manual')).not.toBeNull();
    await store.write((tx) => tx.sql.run("UPDATE trigger_fires SET state = 'cancelled' WHERE trigger_id = ?", [tr.id]));
    expect(await fire(tr, 'prf_a', night + 3 * HOUR)).not.toBeNull();
  });
});

describe('quiet hours in the site time zone', () => {
  // 2026-01-10 21:30 UTC: 22:30 in Berlin (quiet), 16:30 in New York (not), 03:00 next day in Kolkata (quiet).
  const at = t('2026-01-10T21:30:00Z');
  const cases: [string, number | null][] = [
    ['Europe/Berlin', t('2026-01-11T06:00:00Z')], // 07:00 CET
    ['America/New_York', null],
    ['Asia/Kolkata', t('2026-01-11T01:30:00Z')], // 07:00 IST
  ];
  for (const [tz, due] of cases) {
    it(`defers to 07:00 local in ${tz} when the instant is quiet there`, async () => {
      const tr = await trigger(await site(tz), { cap_count: 5, cap_hours: 1, quiet: ['22:00', '07:00'] });
      const f = (await fire(tr, 'prf_a', at))!;
      expect([Number(f.due_at), Number(f.deferred)]).toEqual(due === null ? [at, 0] : [due, 1]);
    });
  }
});

describe('event triggers asked by the operations of one group', () => {
  it('runs of the same site and type, each next to one differing in the site or the type alone: each gets its own site and type\'s triggers; an ask after a trigger change of the same operation sees it', async () => {
    const a = await site('UTC');
    const b = await site('UTC');
    const on = async (siteId: string, type: string, enabled: boolean): Promise<string> => {
      const tr = await trigger(siteId, { cap_count: 10, cap_hours: 1 });
      await store.write(async (tx) => {
        await tx.triggers.update(siteId, tr.id, { ...tr, on_value: type }, Date.now());
        if (enabled) await tx.triggers.setEnabled(siteId, tr.id, true, Date.now());
      });
      return tr.id;
    };
    const aPageview = await on(a, 'pageview', true);
    const bClick = await on(b, 'click', true);
    await on(a, 'click', false);
    const run: [string, string][] = [
      [a, 'pageview'],
      [a, 'pageview'],
      [a, 'click'],
      [a, 'click'],
      [b, 'click'],
      [b, 'click'],
      [b, 'pageview'],
      [b, 'pageview'],
    ];
    const asks = [...run, ...run, ...run];
    // Operations submitted in one turn (one group commit; on PostgreSQL their asks share a statement wave).
    const got = await Promise.all(
      asks.map(([s, type], i) => store.write(async (tx) => (await tx.triggers.listeningForEvent(s, type)).map((r) => `${r.site_id}/${r.on_value}/${r.id}`), { key: `ask${i}` })),
    );
    expect(got).toEqual(asks.map(([s, type]) => (s === a && type === 'pageview' ? [`${a}/pageview/${aPageview}`] : s === b && type === 'click' ? [`${b}/click/${bClick}`] : [])));
    const changed = await store.write(async (tx) => {
      const before = (await tx.triggers.listeningForEvent(b, 'pageview')).length;
      const tr = (await tx.triggers.list(b)).find((r) => r.id === bClick)!;
      await tx.triggers.update(b, tr.id, { ...tr, on_value: 'pageview' }, Date.now());
      return [before, (await tx.triggers.listeningForEvent(b, 'pageview')).map((r) => r.id)];
    });
    expect(changed).toEqual([0, [bClick]]);
  });
});
