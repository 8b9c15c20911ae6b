import querystring from 'node:querystring';
import { describe, expect, it } from 'vitest';
import { plainProfileQuery } from '../../src/pulse/router.js';
import { profileQuerySchema } from '../../src/pulse/schemas.js';

/** GET /profile skips the schema for a query plainProfileQuery takes: the schema must take every such query, with the same result. */

const hex = 'a'.repeat(64);
const queries = [
  '',
  'profile_id=prf_1',
  'visitor_id=v1&include_pii=true',
  'email=a%40example.com&include_pii=false',
  'external_id=crm-1',
  `email_sha256=${hex}`,
  `phone_sha256=${hex}`,
  `email_sha256=${'A'.repeat(64)}`,
  `email_sha256=${hex}0`,
  'profile_id=',
  `profile_id=${'p'.repeat(128)}`,
  `profile_id=${'p'.repeat(129)}`,
  `visitor_id=${'v'.repeat(129)}`,
  `email=${'e'.repeat(320)}`,
  `email=${'e'.repeat(321)}`,
  `external_id=${'x'.repeat(256)}`,
  `external_id=${'x'.repeat(257)}`,
  'profile_id=a&profile_id=b',
  'profile_id=a&visitor_id=b',
  'include_pii=yes&profile_id=a',
  'include_pii=TRUE&profile_id=a',
  'include_pii=true&include_pii=true&profile_id=a',
  'profile_id=a%00b',
  'limit=3&profile_id=a',
  '__proto__=x&profile_id=a',
  'constructor=x',
  'toString=x',
  'hasOwnProperty=x&profile_id=a',
  'profile_id=%F0%9F%98%80',
  `visitor_id=${'\u00e9'.repeat(128)}`,
];

describe('plainProfileQuery', () => {
  for (const q of queries) {
    it(`takes "${q.slice(0, 40)}" only when the schema takes it as it is`, () => {
      const given = querystring.parse(q) as Record<string, unknown>;
      const fast = plainProfileQuery(given);
      const r = profileQuerySchema.safeParse(given);
      if (fast !== null) {
        expect(r.success).toBe(true);
        expect({ ...fast }).toEqual(r.data);
      }
      // What it leaves to the schema is either refused there or has no U+0000-free plain form it missed.
      if (r.success && !q.includes('%00')) expect(fast).not.toBeNull();
    });
  }
});
