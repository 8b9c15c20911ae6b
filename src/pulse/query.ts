import { createHash } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import { parseRule, type Rule } from '../domain/segments/rules.js';
import { piiTraitsOf, profilesMatching } from '../domain/profiles/query.js';
import type { CallerKey } from './auth.js';
import { requireScope } from './auth.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { PAGE_LIMIT } from './schemas.js';

/**
 * POST profiles/query: the profile ids a rule matches, in ascending id order.
 * The first page fixes the evaluation time; the cursor carries it and a
 * fingerprint of the rule, so every page answers the same question.
 */
export async function queryProfiles(store: Store, key: CallerKey, body: { rule: unknown; limit?: number; cursor?: string }) {
  const parsed = parseRule(body.rule);
  if (!parsed.ok) {
    throw new AppError('bad_request', `rule: ${parsed.error.path}: ${parsed.error.message}`, {
      field: `rule${parsed.error.path.slice(1)}`,
      issues: parsed.error.issues,
    });
  }
  const rule: Rule = parsed.rule;
  const pii = piiTraitsOf(rule);
  // The company node is company-level (one-person domains never match): no profile:read:pii needed.
  if (pii.length > 0) requireScope(key, 'profile:read:pii', `a rule testing ${pii.join(', ')}`);
  const fingerprint = createHash('sha256').update(JSON.stringify(rule)).digest('hex').slice(0, 16);
  const cursor = decodeCursor(body.cursor);
  if (cursor && cursor.rule !== fingerprint) throw new AppError('bad_request', 'cursor belongs to another rule', { field: 'cursor' });
  const now = typeof cursor?.now === 'number' ? cursor.now : Date.now();
  const limit = body.limit ?? PAGE_LIMIT.default;
  const page = await profilesMatching(store, key.siteId, rule, { now, afterId: (cursor?.after as string | undefined) ?? '', limit });
  return {
    profile_ids: page.ids,
    next_cursor: page.more ? encodeCursor({ rule: fingerprint, now, after: page.ids[page.ids.length - 1]! }) : null,
    evaluated_at: new Date(now).toISOString(),
  };
}
