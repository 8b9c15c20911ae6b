import { describe, expect, it } from 'vitest';
import { heatOf, rankHot } from '../../src/domain/accounts/hot.js';
import { IpRangeIndex } from '../../src/domain/accounts/ip-ranges.js';
import { aggregateSignals, Attributor, emptySignals, pagePath, type WindowRows } from '../../src/domain/accounts/signals.js';

const profiles = new Map([
  ['prf_jane', 'acme.com'],
  ['prf_joe', 'acme.com'],
  ['prf_ann', 'beta.io'],
]);
const ranges = new IpRangeIndex([{ cidr: '198.51.100.0/24', domain: 'acme.com', name: 'Acme' }]);
const by = new Attributor(profiles, ranges);
const s = (session_id: string, profile_id: string, ip: string | null = null) => ({ session_id, profile_id, ip });

const rows: WindowRows = {
  sessions: [s('s1', 'prf_jane'), s('s2', 'prf_jane'), s('s3', 'prf_joe'), s('s4', 'prf_anon', '198.51.100.9'), s('s5', 'prf_ann'), s('s6', 'prf_gmail', '192.0.2.1')],
  pageviews: [
    { ...s('s1', 'prf_jane'), url: 'https://acme-shop.test/pricing?email=jane@acme.com' },
    { ...s('s1', 'prf_jane'), url: 'https://acme-shop.test/pricing' },
    { ...s('s3', 'prf_joe'), url: '/pricing#plans' },
    { ...s('s3', 'prf_joe'), url: '/users/jane@acme.com/settings' },
    { ...s('s4', 'prf_anon', '198.51.100.9'), url: '/docs' },
    { ...s('s6', 'prf_gmail', '192.0.2.1'), url: '/pricing' },
    { ...s('s5', 'prf_ann'), url: 42 },
  ],
  scores: [
    { ...s('s1', 'prf_jane'), score: 90 },
    { ...s('s1', 'prf_jane'), score: 40 },
    { ...s('s3', 'prf_joe'), score: 69.9 },
    { ...s('s6', 'prf_gmail', '192.0.2.1'), score: 99 },
  ],
  conversions: [
    { ...s('s3', 'prf_joe'), revenue: 100, currency: 'USD' },
    { ...s('s4', 'prf_anon', '198.51.100.9'), revenue: 50.5, currency: 'USD' },
    { ...s('s4', 'prf_anon', '198.51.100.9'), revenue: 999, currency: 'EUR' },
  ],
};

describe('company signal aggregation', () => {
  const out = aggregateSignals(rows, by, { threshold: 70, topPages: 10, currency: 'USD' });

  it('counts per company: contacts by email domain, anonymous sessions by IP range, nobody else', () => {
    expect([...out.keys()].sort()).toEqual(['acme.com', 'beta.io']);
    const acme = out.get('acme.com')!;
    expect(acme).toMatchObject({
      sessions: 4,
      ip_attributed_sessions: 1,
      known_visitors: 2,
      page_views: 5,
      conversions: 3,
      revenue: 150.5,
      score_avg: 66.63,
      score_max: 90,
    });
    expect(out.get('beta.io')).toMatchObject({ sessions: 1, known_visitors: 1, page_views: 1, top_pages: [] });
  });

  it('counts high-intent page views from sessions whose highest score reached the threshold (inclusive)', () => {
    const acme = out.get('acme.com')!;
    expect(acme.high_intent_page_views).toBe(2);
    expect(acme.high_intent_sessions).toBe(1);
    const at = aggregateSignals(rows, by, { threshold: 69.9, topPages: 10, currency: 'USD' }).get('acme.com')!;
    expect(at.high_intent_page_views).toBe(4);
    expect(at.high_intent_sessions).toBe(2);
  });

  it('lists pages by path only, redacting what looks personal', () => {
    expect(out.get('acme.com')!.top_pages).toEqual([
      { path: '/pricing', views: 3 },
      { path: '/docs', views: 1 },
      { path: '/users/:redacted/settings', views: 1 },
    ]);
    expect(pagePath('/p/4915112345678')).toBe('/p/:redacted');
    expect(pagePath('/a%40b.com')).toBe('/:redacted');
    expect(pagePath(null)).toBeNull();
  });

  it('never lets a person through: no profile id, email, IP or session id in the output', () => {
    const text = JSON.stringify([...out.entries()]);
    for (const secret of ['prf_', 'jane', '@', '198.51', '192.0.2', 's1', 's3', 's4']) expect(text).not.toContain(secret);
  });

  it('attributes a contact by email before an IP range', () => {
    const both = new Attributor(new Map([['p', 'beta.io']]), ranges);
    expect(both.attribute({ profile_id: 'p', ip: '198.51.100.1' })).toEqual({ domain: 'beta.io', via: 'contact' });
    expect(both.attribute({ profile_id: 'q', ip: '198.51.100.1' })).toEqual({ domain: 'acme.com', via: 'ip_range' });
    expect(new Attributor(new Map(), null).attribute({ profile_id: 'q', ip: '198.51.100.1' })).toBeNull();
  });
});

describe('hot accounts', () => {
  const sig = (o: Partial<ReturnType<typeof emptySignals>>) => ({ ...emptySignals(), ...o });

  it('weighs rises and ignores falls', () => {
    const h = heatOf(sig({ sessions: 5, known_visitors: 2, page_views: 4, conversions: 0, score_avg: 60 }), sig({ sessions: 2, known_visitors: 3, page_views: 0, conversions: 1, score_avg: 50 }));
    // sessions +3 x1, page_views +4 x0.25, score_avg +10 x0.1; known_visitors and conversions fell
    expect(h.heat).toBe(5);
    expect(h.rises.map((r) => r.signal)).toEqual(['sessions', 'page_views', 'score_avg']);
    expect(h.rises[0]).toEqual({ signal: 'sessions', previous: 2, current: 5, change: 3 });
  });

  it('skips the score when either window has none', () => {
    expect(heatOf(sig({ score_avg: 80 }), sig({ score_avg: null })).heat).toBe(0);
  });

  it('ranks by heat, then domain; leaves out cooling accounts and too few sessions', () => {
    const cur = new Map([
      ['b.com', sig({ sessions: 3, conversions: 1 })],
      ['a.com', sig({ sessions: 13 })],
      ['c.com', sig({ sessions: 1 })],
      ['cool.com', sig({ sessions: 1 })],
    ]);
    const prev = new Map([['cool.com', sig({ sessions: 9 })]]);
    expect(rankHot(cur, prev, emptySignals, { minSessions: 1, limit: 10 }).map((h) => [h.domain, h.heat])).toEqual([
      ['a.com', 13],
      ['b.com', 13],
      ['c.com', 1],
    ]);
    expect(rankHot(cur, prev, emptySignals, { minSessions: 2, limit: 1 }).map((h) => h.domain)).toEqual(['a.com']);
  });
});
