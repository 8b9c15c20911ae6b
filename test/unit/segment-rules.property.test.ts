import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { SqliteSql, type Sql } from '../../src/store/sql.js';
import { PgSql } from '../../src/store/pg/sql.js';
import { migratePg, pgClientConfig } from '../../src/store/pg/store.js';
import { databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import { profileMatchesSql, profilesMatchingSql } from '../../src/store/rule-sql.js';
import { evaluateRule, type ProfileFacts } from '../../src/domain/segments/evaluate.js';
import { parseRule, usesCompany, type Rule } from '../../src/domain/segments/rules.js';

/**
 * The SQL compiler and the in-memory evaluator are two implementations of one
 * language: for random rules over random profiles they must give the same
 * answer, profile by profile and for the site-wide keyset query. Run on the
 * store of the test project: SQLite, or PostgreSQL (the jsonb form of the
 * compiler) in a schema of its own.
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-rules-'));
let x: Sql;
let close: () => Promise<void>;
beforeAll(async () => {
  if (PG_BASE_URL === undefined) {
    const db = openDatabase({ dataDir: dir, synchronous: 'normal' });
    x = new SqliteSql(db);
    close = async () => void db.close();
    return;
  }
  const { schema, ...config } = pgClientConfig({ url: databaseUrlFor(dir), poolSize: 2 });
  const pool = new pg.Pool(config);
  await migratePg(pool, schema);
  x = new PgSql(pool);
  close = async () => {
    await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
    await pool.end();
  };
});
beforeAll(async () => {
  await x.run("INSERT INTO accounts (id, name, created_at) VALUES ('acct_rules', 'Rules', ?)", [NOW]);
});
afterAll(async () => {
  await close();
  rmSync(dir, { recursive: true, force: true });
});

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const DAY = 86_400_000;

const traitNames = ['plan', 'n', 'city', 'a.b', 'x-y'];
const traitValues = ['gold', 'silver', '', '5', '-3.5', '10', 'gol', 'Gold', 'x y', '007', '1e3', ' 5'];
const eventTypes = ['view', 'cart', 'buy'];
const propValue = fc.oneof(
  fc.constantFrom('A1', 'B2', '12', '', 'a1', '3.5'),
  fc.integer({ min: -3, max: 30 }),
  fc.constantFrom(true, false, null, 2.5),
);

// Company facts: the profile_companies row of each profile. The known persons of a domain are counted over the
// profiles of one site (one property run), so a domain with one email profile is personal in that run.
const companyDomains = ['acme.com', 'globex.io', 'solo.dev', 'initech.net'];
type GeneratedFacts = Omit<ProfileFacts, 'company'> & { email_domain: string | null; ip_domain: string | null };

const factsArb: fc.Arbitrary<GeneratedFacts> = fc.record({
  email_domain: fc.option(fc.constantFrom('acme.com', 'globex.io', 'solo.dev'), { nil: null, freq: 2 }),
  ip_domain: fc.option(fc.constantFrom('acme.com', 'initech.net'), { nil: null, freq: 2 }),
  traits: fc.dictionary(fc.constantFrom(...traitNames), fc.constantFrom(...traitValues), { maxKeys: 4 }),
  events: fc.array(
    fc.record({
      type: fc.constantFrom(...eventTypes),
      ts: fc.integer({ min: 0, max: 20 }).map((d) => NOW - d * DAY - 1000),
      body: fc.record(
        {
          sku: propValue,
          qty: propValue,
          cart: fc.oneof(fc.record({ total: propValue }, { requiredKeys: [] }), propValue),
        },
        { requiredKeys: [] },
      ),
    }),
    { maxLength: 6 },
  ),
  conversions: fc.array(
    fc.record({
      revenue: fc.option(fc.integer({ min: 0, max: 200 }), { nil: null }),
      created_at: fc.integer({ min: 0, max: 40 }).map((d) => NOW - d * DAY - 1000),
      // The sites are in USD; a EUR conversion (recorded before a currency change) counts, but its revenue is not added.
      in_site_currency: fc.constantFrom(true, true, true, false),
    }),
    { maxLength: 4 },
  ),
  scores: fc.array(
    fc.record({ score: fc.option(fc.integer({ min: -5, max: 100 }), { nil: null }), received_at: fc.integer({ min: 0, max: 6 }).map((d) => NOW - d * 3 * DAY - 1000) }),
    { maxLength: 5 },
  ),
  segments: fc.subarray(['seg_a', 'seg_b']).map((s) => new Set(s)),
});

const traitOp = fc.constantFrom('eq', 'neq', 'in', 'contains', 'starts_with', 'exists', 'not_exists', 'gt', 'gte', 'lt', 'lte');
const compareOp = fc.constantFrom('eq', 'neq', 'gt', 'gte', 'lt', 'lte');
const num = fc.oneof(fc.integer({ min: -5, max: 30 }), fc.constantFrom(2.5, -3.5, 0));

function valueFor(op: string, allowBool: boolean): fc.Arbitrary<unknown> {
  if (op === 'exists' || op === 'not_exists') return fc.constant(undefined);
  if (['gt', 'gte', 'lt', 'lte'].includes(op)) return num;
  if (op === 'contains' || op === 'starts_with') return fc.constantFrom('g', 'go', 'o', 'ld', 'A', '1', '2', '5', ' ', 'x y', '0');
  const scalar = allowBool ? fc.oneof(fc.constantFrom(...traitValues, 'A1', '12'), fc.integer({ min: -3, max: 30 }), fc.boolean()) : fc.constantFrom(...traitValues);
  if (op === 'in') return fc.array(allowBool ? fc.oneof(fc.constantFrom(...traitValues, 'A1'), fc.integer({ min: -3, max: 30 })) : fc.constantFrom(...traitValues), { minLength: 1, maxLength: 4 });
  return scalar;
}

const withValue = (base: Record<string, unknown>, allowBool: boolean) =>
  fc.tuple(traitOp, fc.constant(null)).chain(([op]) => valueFor(op, allowBool).map((value) => (value === undefined ? { ...base, op } : { ...base, op, value })));

const traitArb = fc.constantFrom(...traitNames).chain((trait) => withValue({ trait }, false));
const propertyArb = fc.constantFrom('sku', 'qty', 'cart.total', 'cart', 'missing').chain((property) => withValue({ property }, true));
const windowArb = fc.oneof(fc.constant({}), fc.integer({ min: 1, max: 30 }).map((d) => ({ within_days: d })), fc.integer({ min: 1, max: 400 }).map((h) => ({ within_hours: h })));
const eventArb = fc
  .record({
    event: fc.constantFrom(...eventTypes),
    where: fc.option(fc.array(propertyArb, { maxLength: 2 }), { nil: undefined }),
    count: fc.option(fc.record({ op: compareOp, value: fc.integer({ min: 0, max: 4 }) }), { nil: undefined }),
    w: windowArb,
  })
  .map(({ w, ...r }) => ({ ...Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)), ...w }));
const daysArb = fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined });
const conversionsArb = fc
  .record({ metric: fc.constantFrom('count', 'revenue'), op: compareOp, value: fc.integer({ min: 0, max: 300 }), days: daysArb })
  .map(({ days, ...c }) => (days === undefined ? { conversions: c } : { conversions: c, within_days: days }));
const scoreArb = fc
  .record({ agg: fc.constantFrom('latest', 'max', 'avg'), op: compareOp, value: fc.integer({ min: -5, max: 100 }), days: daysArb })
  .map(({ days, ...c }) => (days === undefined ? { score: c } : { score: c, within_days: days }));
const segmentArb = fc.constantFrom('seg_a', 'seg_b', 'seg_c').map((segment) => ({ segment }));
const companyArb = fc.oneof(
  fc.constant({ company: { op: 'exists' } }),
  fc.constantFrom(...companyDomains, 'other.org').map((value) => ({ company: { op: 'eq', value } })),
  fc.subarray([...companyDomains, 'other.org'], { minLength: 1 }).map((value) => ({ company: { op: 'in', value } })),
);

const { rule: ruleArb } = fc.letrec<{ rule: unknown }>((tie) => ({
  rule: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    traitArb,
    eventArb,
    conversionsArb,
    scoreArb,
    segmentArb,
    companyArb,
    fc.array(tie('rule'), { minLength: 1, maxLength: 3 }).map((all) => ({ all })),
    fc.array(tie('rule'), { minLength: 1, maxLength: 3 }).map((any) => ({ any })),
    tie('rule').map((not) => ({ not })),
  ),
}));

let seq = 0;
async function insertProfile(site: string, facts: GeneratedFacts): Promise<string> {
  const id = `prf_${String(++seq).padStart(8, '0')}`;
  await x.run('INSERT INTO profiles (id, site_id, traits, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [id, site, JSON.stringify(facts.traits), NOW, NOW]);
  for (const e of facts.events) {
    await x.run('INSERT INTO events (site_id, session_id, profile_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      site, 's', id, e.type, e.ts, JSON.stringify({ type: e.type, session_id: 's', ...e.body }), NOW,
    ]);
  }
  for (const c of facts.conversions) {
    await x.run("INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES (?, ?, 's', ?, ?, ?, '[]', ?)", [
      `cnv_${id}_${Math.random()}`, site, id, c.revenue, c.in_site_currency ? 'USD' : 'EUR', c.created_at,
    ]);
  }
  for (const s of facts.scores) {
    await x.run("INSERT INTO scores (site_id, session_id, profile_id, score, body, received_at) VALUES (?, 's', ?, ?, '{}', ?)", [site, id, s.score, s.received_at]);
  }
  for (const s of facts.segments) await x.run('INSERT INTO segment_members (segment_id, profile_id, site_id, since) VALUES (?, ?, ?, ?)', [s, id, site, NOW]);
  if (facts.email_domain !== null || facts.ip_domain !== null) {
    await x.run('INSERT INTO profile_companies (profile_id, site_id, email_domain, ip_domain, updated_at) VALUES (?, ?, ?, ?, ?)', [
      id, site, facts.email_domain, facts.ip_domain, NOW,
    ]);
  }
  return id;
}

describe('rule language: SQL and in-memory evaluation agree', () => {
  it('on random rules over random profiles', async () => {
    let matched = 0;
    let checked = 0;
    // company rules: how often they matched, and how often a one-person domain was in play
    const company = { checked: 0, matched: 0, personal: 0 };
    await fc.assert(
      fc.asyncProperty(ruleArb, fc.array(factsArb, { minLength: 1, maxLength: 5 }), async (input, profiles) => {
        const parsed = parseRule(input);
        expect(parsed.ok, JSON.stringify(parsed)).toBe(true);
        const rule = (parsed as { rule: Rule }).rule;
        const site = `site_p${seq}`;
        await x.run("INSERT INTO sites (id, account_id, name, currency, created_at) VALUES (?, 'acct_rules', 'Rules', 'USD', ?)", [site, NOW]);
        const ids: string[] = [];
        for (const f of profiles) ids.push(await insertProfile(site, f));
        const expected: string[] = [];
        const persons = (d: string) => profiles.filter((p) => p.email_domain === d).length;
        for (const [i, generated] of profiles.entries()) {
          const { email_domain, ip_domain, ...rest } = generated;
          const domain = email_domain ?? ip_domain;
          const facts: ProfileFacts = { ...rest, company: domain === null ? null : { domain, known_persons: persons(domain) } };
          const { sql, params } = profileMatchesSql(rule, { profileId: ids[i]!, now: NOW, dialect: x.dialect });
          // 0/1 on SQLite, a boolean on PostgreSQL
          const m = Number((await x.get<{ m: number | boolean }>(sql, params))!.m);
          const mem = evaluateRule(rule, facts, NOW);
          expect(m === 1, `${JSON.stringify(rule)} on ${JSON.stringify({ ...facts, segments: [...facts.segments] })}`).toBe(mem);
          expect([0, 1]).toContain(m);
          if (mem) expected.push(ids[i]!);
          checked += 1;
          if (usesCompany(rule)) {
            company.checked += 1;
            if (mem) company.matched += 1;
            if (facts.company?.known_persons === 1) company.personal += 1;
          }
        }
        matched += expected.length;
        const page = profilesMatchingSql(rule, { siteId: site, now: NOW, afterId: '', limit: 100, dialect: x.dialect });
        expect((await x.all<{ id: string }>(page.sql, page.params)).map((r) => r.id)).toEqual(expected);
      }),
      // Fewer runs on PostgreSQL: every insert is a round trip.
      { numRuns: x.dialect === 'pg' ? 300 : 1000, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31) },
    );
    // the generators must produce both outcomes, or the agreement proves little
    expect(matched).toBeGreaterThan(checked * 0.1);
    expect(matched).toBeLessThan(checked * 0.9);
    expect(company.matched).toBeGreaterThan(company.checked * 0.05);
    expect(company.matched).toBeLessThan(company.checked * 0.95);
    expect(company.personal).toBeGreaterThan(company.checked * 0.05);
  });
});
