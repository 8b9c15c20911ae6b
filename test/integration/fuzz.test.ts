import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cliJson, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { mulberry32 as prng } from '../helpers/prng.js';


const NASTY: unknown[] = [
  null, true, 0, -0, -1, 1e308, 5e-324, 9007199254740991, '', ' ', 'a'.repeat(5000), '\u202e\u0007\uffff', '💥', '<script>',
  '../../etc/passwd', "' OR 1=1 --", [], {}, [[[[[]]]]], { __proto__: 1 }, { constructor: { prototype: {} } }, '2026-13-45T99:99:99Z',
];
const RAW_NUMBERS = ['1e400', '-1e400', '1e-400', '123456789012345678901234567890', '-0.0e-0', 'NaN', 'Infinity', '0x10', '01', '.5'];

describe('fuzz: mutated bodies over every ingestion and profile API route', () => {
  let dataDir: string;
  let site: string;
  let key: string;
  let svc: Svc;

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'profile:read,profile:read:pii,segment:read,webhooks:manage', '--data', dataDir]).key;
    svc = await startSvc({ dataDir, env: { SVC_RATE_LIMIT: 'off' } });
  });
  afterAll(async () => {
    await svc.stop();
    cleanup(dataDir);
  });

  const seeds: Record<string, () => Record<string, unknown>> = {
    '/api/identify': () => ({ site_id: site, session_id: 's', visitor_id: 'v', traits: { email: 'a@b.c', plan: 'x' } }),
    '/api/convert': () => ({ site_id: site, session_id: 's', revenue: 10, line_items: [{ sku: 'a', qty: 1, price: 2 }] }),
    '/api/lead/capture': () => ({ site_id: site, visitor_id: 'v', email: 'a@b.c', name: 'A', phone: '1', source: 'x' }),
    '/api/events': () => ({ site_id: site, session_id: 's', type: 'pageview', url: 'https://a.test/?gclid=1' }),
    '/api/score': () => ({ site_id: site, session_id: 's', score: 0.5, signal: 1 }),
    '/api/pulse/v1/profiles/query': () => ({ rule: { trait: 'plan', op: 'eq', value: 'x' }, limit: 5 }),
    '/api/pulse/v1/webhooks': () => ({ url: 'https://example.com/h', events: ['conversion'] }),
  };

  /** One mutated body: a structural change of the seed, then possibly a textual one of its JSON. */
  function mutate(rand: () => number, seed: Record<string, unknown>): string {
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const body: Record<string, unknown> = seed;
    const keys = Object.keys(body);
    const k = pick(keys);
    switch (Math.floor(rand() * 5)) {
      case 0:
        body[k] = pick(NASTY);
        break;
      case 1:
        delete body[k];
        break;
      case 2:
        body[`x${Math.floor(rand() * 100)}`] = pick(NASTY);
        break;
      case 3:
        if (body[k] && typeof body[k] === 'object') (body[k] as Record<string, unknown>)[pick(['email', 'qty', 'op', 'a', '0'])] = pick(NASTY);
        else body[k] = [body[k]];
        break;
      default:
        break;
    }
    let text = JSON.stringify(body);
    switch (Math.floor(rand() * 6)) {
      case 0:
        text = text.slice(0, Math.floor(rand() * text.length));
        break;
      case 1: {
        const i = Math.floor(rand() * text.length);
        text = text.slice(0, i) + String.fromCharCode(Math.floor(rand() * 0x80)) + text.slice(i + 1);
        break;
      }
      case 2:
        text = text.replace(/:(\d+|"[^"]*")/, `:${pick(RAW_NUMBERS)}`);
        break;
      case 3:
        text = text.replace(/^\{/, `{"${k}":1,`);
        break;
      default:
        break;
    }
    return text;
  }

  it('never answers 5xx, and every refusal carries the JSON error shape (about 2,100 requests)', async () => {
    const rand = prng(0x5eed);
    const failures: string[] = [];
    let sent = 0;
    const byClass = { accepted: 0, refused: 0 };
    for (const [route, seed] of Object.entries(seeds)) {
      const pulse = route.startsWith('/api/pulse');
      for (let batch = 0; batch < 30; batch++) {
        await Promise.all(
          Array.from({ length: 10 }, async () => {
            const text = mutate(rand, seed());
            const contentType = pick3(rand);
            const res = await fetch(`${svc.url}${route}`, {
              method: 'POST',
              headers: { 'content-type': contentType, ...(pulse ? { authorization: `Bearer ${key}` } : {}) },
              body: text,
            });
            const raw = await res.text();
            sent++;
            byClass[res.status < 400 ? 'accepted' : 'refused']++;
            let parsed: any = null;
            try {
              parsed = JSON.parse(raw);
            } catch {
              // checked below
            }
            const ok = res.status < 500 && (res.status < 400 || (typeof parsed?.error?.code === 'string' && typeof parsed?.error?.message === 'string'));
            if (!ok) failures.push(`${route} ${res.status} ${text.slice(0, 200)} -> ${raw.slice(0, 200)}`);
          }),
        );
      }
    }
    expect(sent).toBe(Object.keys(seeds).length * 300);
    expect(failures).toEqual([]);
    // The corpus reaches the handlers: some mutations still make valid requests, most are refused.
    expect(byClass.accepted).toBeGreaterThan(100);
    expect(byClass.refused).toBeGreaterThan(500);
  });
});

function pick3(rand: () => number): string {
  const r = rand();
  return r < 0.8 ? 'application/json' : r < 0.9 ? 'text/plain' : 'application/x-www-form-urlencoded';
}
