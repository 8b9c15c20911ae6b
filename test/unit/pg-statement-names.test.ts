import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as NamesModule from '../../src/store/pg/names.js';

type Names = typeof NamesModule;

// names.ts keeps per-process state; the unit tests share processes, so each test loads it afresh.
let names: Names;
beforeEach(async () => {
  vi.resetModules();
  names = await import('../../src/store/pg/names.js');
});

describe('prepared statement names', () => {
  it('names a text once, the same name every time', () => {
    const a = names.statementName('SELECT 1 FROM sites WHERE id = ?');
    expect(a).toMatch(/^svc_\d+$/);
    expect(names.statementName('SELECT 1 FROM sites WHERE id = ?')).toBe(a);
    expect(names.statementName('SELECT 2 FROM sites WHERE id = ?')).not.toBe(a);
  });

  it('run-time texts have a budget of their own: the fixed texts are named after 300 compiled rules', () => {
    const named: (string | undefined)[] = [];
    for (let i = 0; i < 300; i++) {
      const text = `SELECT (p.n > ${i}) AS m FROM profiles p WHERE p.id = ?`;
      names.builtAtRunTime(text);
      named.push(names.statementName(text));
    }
    expect(named.slice(0, 250).every((n) => n !== undefined)).toBe(true);
    expect(named.slice(250).every((n) => n === undefined)).toBe(true);
    // A rule named earlier keeps its name.
    names.builtAtRunTime('SELECT (p.n > 3) AS m FROM profiles p WHERE p.id = ?');
    expect(names.statementName('SELECT (p.n > 3) AS m FROM profiles p WHERE p.id = ?')).toBe(named[3]);
    // The repositories' own texts are still named.
    const fixed = names.statementName('INSERT INTO exposures (site_id) VALUES (?)');
    expect(fixed).toMatch(/^svc_\d+$/);
    expect(new Set([...named, fixed]).size).toBe(252); // 250 names, undefined, and the fixed text's own
  });

  it('the fixed texts have a bound too (a safety net: 1,000)', () => {
    let last: string | undefined;
    for (let i = 0; i < 1_001; i++) last = names.statementName(`SELECT ${i}`);
    expect(last).toBeUndefined();
    expect(names.statementName('SELECT 999')).toMatch(/^svc_\d+$/);
  });

  it('a segment rule compiled for PostgreSQL is counted as built at run time', async () => {
    const { profileMatchesSql } = await import('../../src/store/rule-sql.js');
    const { parseRule } = await import('../../src/domain/segments/rules.js');
    const parsed = parseRule({ trait: 'n', op: 'gte', value: 3 });
    if (!('rule' in parsed)) throw new Error('rule expected');
    const { sql } = profileMatchesSql(parsed.rule, { profileId: 'prf_1', now: 0, dialect: 'pg' });
    for (let i = 0; i < 1_000; i++) names.statementName(`SELECT ${i}`);
    expect(names.statementName('SELECT fixed')).toBeUndefined();
    expect(names.statementName(sql)).toMatch(/^svc_\d+$/);
  });
});
