import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countNodes, parseRule, referencedSegments, ruleSchema, type Rule } from '../../src/domain/segments/rules.js';
import { profileMatchesSql, profilesMatchingSql } from '../../src/store/rule-sql.js';
import { openDatabase } from '../../src/store/db.js';

const fail = (input: unknown) => {
  const r = parseRule(input);
  if (r.ok) throw new Error(`expected ${JSON.stringify(input)} to be refused`);
  return r.error;
};

describe('parseRule', () => {
  it('accepts every kind of node', () => {
    const rule = {
      all: [
        { trait: 'plan', op: 'in', value: ['gold', 'pro'] },
        { any: [{ trait: 'n', op: 'gte', value: 3 }, { not: { trait: 'email', op: 'exists' } }] },
        { event: 'add_to_cart', where: [{ property: 'cart.total', op: 'gt', value: 50 }, { property: 'gift', op: 'eq', value: true }], count: { op: 'gte', value: 2 }, within_days: 7 },
        { event: 'pricing_view', within_hours: 24 },
        { conversions: { metric: 'revenue', op: 'gte', value: 100 }, within_days: 30 },
        { score: { agg: 'latest', op: 'gte', value: 70 } },
        { segment: 'seg_abc' },
      ],
    };
    const r = parseRule(rule);
    expect(r).toEqual({ ok: true, rule });
    expect(countNodes((r as { rule: Rule }).rule)).toBe(11);
    expect(referencedSegments((r as { rule: Rule }).rule)).toEqual(['seg_abc']);
  });

  it.each([
    [{ all: [{ trait: 'plan', op: 'eq', value: 'a' }, { trait: 'n', op: 'bogus', value: 5 }] }, '$.all[1].op'],
    [{ any: [{ not: { trait: 'n', op: 'gt', value: 'five' } }] }, '$.any[0].not.value'],
    [{ all: [] }, '$.all'],
    [{ all: [{ trait: 'a', op: 'exists' }], extra: 1 }, '$.extra'],
    [{ trait: 'plan', op: 'eq', value: 'a', colour: 'red' }, '$'],
    [{ trait: 'plan', op: 'exists', value: 'a' }, '$.value'],
    [{ trait: 'plan', op: 'in', value: [] }, '$.value'],
    [{ trait: "pl'an", op: 'eq', value: 'a' }, '$.trait'],
    [{ trait: 'plan"]', op: 'eq', value: 'a' }, '$.trait'],
    [{ event: 'view', where: [{ property: 'a..b', op: 'exists' }] }, '$.where[0].property'],
    [{ event: 'view', within_days: 7, within_hours: 2 }, '$.within_hours'],
    [{ event: 'view', count: { op: 'gte', value: -1 } }, '$.count.value'],
    [{ conversions: { metric: 'profit', op: 'gt', value: 1 } }, '$.conversions.metric'],
    [{ score: { agg: 'latest', op: 'gt', value: Number.NaN } }, '$.score.value'],
    [{ segment: "seg_x' OR 1=1 --" }, '$.segment'],
    [{ nothing: true }, '$'],
    ['trait', '$'],
    [[{ trait: 'a', op: 'exists' }], '$'],
  ])('refuses %j naming %s', (input, where) => {
    const e = fail(input);
    expect(e.path).toBe(where);
    expect(e.message.length).toBeGreaterThan(5);
  });

  it('reads company nodes as registrable domains and refuses personal or free-mail values', () => {
    expect(parseRule({ company: { op: 'in', value: ['https://www.Acme.com/pricing', 'sub.globex.co.uk', 'acme.com'] } })).toEqual({
      ok: true,
      rule: { company: { op: 'in', value: ['acme.com', 'globex.co.uk'] } },
    });
    expect(parseRule({ company: { op: 'exists' } })).toEqual({ ok: true, rule: { company: { op: 'exists' } } });
    const cases: [unknown, string, string][] = [
      [{ company: { op: 'in', value: ['acme.com', 'gmail.com'] } }, '$.company.value[1]', 'free-mail'],
      [{ company: { op: 'eq', value: 'proton.me' } }, '$.company.value', 'free-mail'],
      [{ company: { op: 'eq', value: 'jane@acme.com' } }, '$.company.value', 'not an email address'],
      [{ company: { op: 'eq', value: '203.0.113.9' } }, '$.company.value', 'IP address'],
      [{ company: { op: 'eq', value: 'co.uk' } }, '$.company.value', 'registrable domain'],
      [{ company: { op: 'in', value: 'acme.com' } }, '$.company.value', 'array'],
      [{ company: { op: 'exists', value: 'acme.com' } }, '$.company.value', 'no value'],
      [{ company: { op: 'like', value: 'acme.com' } }, '$.company.op', ''],
      [{ company: { op: 'eq', value: 'acme.com', extra: 1 } }, '$.company', ''],
    ];
    for (const [input, path, message] of cases) {
      const e = fail(input);
      expect(e.path, JSON.stringify(input)).toBe(path);
      expect(e.message).toContain(message);
    }
  });

  it('bounds depth and size', () => {
    let deep: unknown = { trait: 'a', op: 'exists' };
    for (let i = 0; i < 8; i++) deep = { not: deep };
    expect(parseRule(deep).ok).toBe(true);
    const tooDeep = fail({ not: deep });
    expect(tooDeep.message).toMatch(/at most 8/);
    expect(tooDeep.path).toBe('$.not.not.not.not.not.not.not.not');
    const wide = { all: Array.from({ length: 50 }, () => ({ any: [{ trait: 'a', op: 'exists' }, { trait: 'b', op: 'exists' }] })) };
    expect(fail(wide).message).toMatch(/at most 100 nodes/);
    expect(fail({ all: Array.from({ length: 51 }, () => ({ trait: 'a', op: 'exists' })) }).path).toBe('$.all');
  });

  it('as a body field, keeps node paths under the field name', () => {
    const r = ruleSchema.safeParse({ all: [{ trait: 'a', op: 'exists' }, { trait: 'n', op: 'bogus' }] });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(['all', 1, 'op']);
  });
});

describe('compiled SQL', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-rulesql-'));
  const db = openDatabase({ dataDir: dir, synchronous: 'normal' });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('binds every value: hostile strings are data, never SQL', () => {
    const hostile = "x' OR 1=1; DROP TABLE profiles; --";
    const rule = parseRule({
      any: [
        { trait: 'plan', op: 'eq', value: hostile },
        { trait: 'plan', op: 'in', value: [hostile, '"); DELETE FROM events; --'] },
        { event: hostile, where: [{ property: 'sku', op: 'starts_with', value: hostile }] },
      ],
    });
    expect(rule.ok).toBe(true);
    const { sql, params } = profilesMatchingSql((rule as { rule: Rule }).rule, { siteId: 's', now: 0, afterId: '', limit: 10 });
    expect(sql).not.toContain('DROP');
    expect(sql).not.toContain('OR 1=1');
    expect(params).toContain(hostile);
    // Counted before and after, not as a total: other tests of this file store profiles in the same database.
    const profiles = () => (db.prepare('SELECT count(*) AS n FROM profiles').get() as { n: number }).n;
    const before = profiles();
    db.prepare("INSERT INTO profiles (id, site_id, traits, created_at, updated_at) VALUES ('prf_1', 's', ?, 0, 0)").run(JSON.stringify({ plan: hostile }));
    db.prepare("INSERT INTO profiles (id, site_id, traits, created_at, updated_at) VALUES ('prf_2', 's', '{\"plan\":\"gold\"}', 0, 0)").run();
    expect((db.prepare(sql).all(...params) as { id: string }[]).map((r) => r.id)).toEqual(['prf_1']);
    expect(profiles()).toBe(before + 2);
  });

  it('reads numeric strings as numbers and nothing else', () => {
    db.prepare("INSERT INTO profiles (id, site_id, traits, created_at, updated_at) VALUES ('prf_n1', 'n', '{\"n\":\"12\"}', 0, 0)").run();
    db.prepare("INSERT INTO profiles (id, site_id, traits, created_at, updated_at) VALUES ('prf_n2', 'n', '{\"n\":\"9\"}', 0, 0)").run();
    db.prepare("INSERT INTO profiles (id, site_id, traits, created_at, updated_at) VALUES ('prf_n3', 'n', '{\"n\":\"1e3\"}', 0, 0)").run();
    db.prepare("INSERT INTO profiles (id, site_id, traits, created_at, updated_at) VALUES ('prf_n4', 'n', '{\"n\":\"-3.5\"}', 0, 0)").run();
    const ids = (r: unknown) => {
      const { sql, params } = profilesMatchingSql((parseRule(r) as { rule: Rule }).rule, { siteId: 'n', now: 0, afterId: '', limit: 10 });
      return (db.prepare(sql).all(...params) as { id: string }[]).map((x) => x.id);
    };
    expect(ids({ trait: 'n', op: 'gt', value: 10 })).toEqual(['prf_n1']); // "9" < 10 numerically, though "9" > "10" as text
    expect(ids({ trait: 'n', op: 'lt', value: 10 })).toEqual(['prf_n2', 'prf_n4']); // "1e3" is not a plain decimal
    expect(ids({ not: { trait: 'n', op: 'lt', value: 10 } })).toEqual(['prf_n1', 'prf_n3']);
    const one = profileMatchesSql((parseRule({ trait: 'n', op: 'gte', value: -3.5 }) as { rule: Rule }).rule, { profileId: 'prf_n4', now: 0 });
    expect(db.prepare(one.sql).get(...one.params)).toEqual({ m: 1 });
  });
});
