import { describe, expect, it } from 'vitest';
import { decideQuery, decideQuerySchema } from '../../src/ingest/decide.js';
import { AppError } from '../../src/errors/app-error.js';
import { nulError, validationError } from '../../src/errors/validation.js';

/** The query as GET /api/decide read it before its direct path: URLSearchParams, then the schema. */
function reference(target: string): unknown {
  const q = target.indexOf('?');
  const hash = q === -1 ? -1 : target.indexOf('#', q);
  const params = new URLSearchParams(q === -1 ? '' : hash === -1 ? target.slice(q + 1) : target.slice(q + 1, hash));
  const raw: Record<string, string> = {};
  for (const key of ['site_id', 'visitor_id', 'url'] as const) {
    const all = params.getAll(key);
    if (all.length > 1) throw new AppError('validation_failed', `${key}: given ${all.length} times; give it once`, { field: key });
    if (all.length === 1) raw[key] = all[0]!;
  }
  const nul = nulError(raw);
  if (nul) throw nul;
  const parsed = decideQuerySchema.safeParse(raw);
  if (!parsed.success) throw validationError(parsed.error);
  return parsed.data;
}

function outcome(f: () => unknown): unknown {
  try {
    return { ok: f() };
  } catch (err) {
    const e = err as AppError;
    return { code: e.code, message: e.message, details: e.details };
  }
}

describe("GET /api/decide's query read directly", () => {
  const url = encodeURIComponent('https://shop.example/p1/item-3?utm_source=x&a=b');
  const targets = [
    `/api/decide?site_id=site_1&visitor_id=v-1&url=${url}`,
    `/api/decide?url=${url}&visitor_id=v+1&site_id=site_1&_=123`,
    `/api/decide?site_id=s&visitor_id=%E2%82%AC%F0%9F%98%80&url=%2Fa%2Bb+c`,
    `/api/decide?site%5Fid=s&visitor_id=v&url=/x`,
    `/api/decide?site%5Fid=s&site_id=t&visitor_id=v&url=/x`,
    `/api/decide?site_id=s&visitor_id=v&url=/x&url=/y`,
    `/api/decide?site_id=s&visitor_id=%E9&url=/x`,
    `/api/decide?site_id=s&visitor_id=%zz&url=/x`,
    `/api/decide?site_id=s&visitor_id=%ED%A0%80&url=/x`,
    `/api/decide?site_id=s&visitor_id=a%00b&url=/x`,
    `/api/decide?site_id=&visitor_id=v&url=/x`,
    `/api/decide?site_id=s&visitor_id&url=/x`,
    `/api/decide?site_id=s&url=/x`,
    `/api/decide?site_id=${'s'.repeat(64)}&visitor_id=${'v'.repeat(128)}&url=/${'u'.repeat(2047)}`,
    `/api/decide?site_id=${'s'.repeat(65)}&visitor_id=v&url=/x`,
    `/api/decide?site_id=s&visitor_id=${'%C3%A9'.repeat(128)}&url=/x`,
    `/api/decide?site_id=s&visitor_id=${'%C3%A9'.repeat(129)}&url=/x`,
    `/api/decide?site_id=s&&visitor_id=v&url=/x#frag&site_id=t`,
    `/api/decide?site_id=s&visitor_id=v\u00e9&url=/x`,
    `/api/decide?site_id=s&visitor_id=v w&url=/x`,
    `/api/decide?site_id=s=t&visitor_id=v&url=/x?a=b`,
    '/api/decide',
    '/api/decide?',
  ];
  it('gives what URLSearchParams and the schema give, errors included', () => {
    for (const t of targets) expect(outcome(() => decideQuery(t)), t).toEqual(outcome(() => reference(t)));
    expect(decideQuery(targets[2]!)).toEqual({ site_id: 's', visitor_id: '\u20ac\u{1f600}', url: '/a+b c' });
    expect(outcome(() => decideQuery(targets[5]!))).toMatchObject({ code: 'validation_failed', message: 'url: given 2 times; give it once' });
  });
});
