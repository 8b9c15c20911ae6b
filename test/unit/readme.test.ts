import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CATALOGUE, EVENT_TYPES } from '../../src/webhooks/catalogue.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('README stays true', () => {
  it('starts with the install-and-serve command and the test command that .ci/run runs', () => {
    const lines = readme.split('\n');
    expect(lines[1]).toMatch(/^npm install && npx svc serve\b/);
    const test = /^(SVC_TEST_DATABASE_URL=\S+ npm test)\b/.exec(lines[2]!)?.[1];
    expect(test).toBeDefined();
    // .ci/run ends with exactly that command (the PostgreSQL run is part of it, not optional).
    const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');
    expect(ci.trimEnd().split('\n').at(-1)).toBe(test);
  });

  it('documents every webhook event type with its example payload', () => {
    for (const t of EVENT_TYPES) {
      expect(readme, t).toContain(`| \`${t}\` | ${CATALOGUE[t].description} |`);
      expect(readme, t).toContain(JSON.stringify(CATALOGUE[t].example));
    }
  });
});
