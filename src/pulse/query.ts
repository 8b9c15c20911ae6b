import { createHash } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import { parseRule, usesCompany, type Rule } from '../domain/segments/rules.js';
import { ensureCompanyIndex } from '../domain/accounts/profile-company.js';
import { profilesMatchingSql } from '../store/rule-sql.js';
import { PII_TRAITS } from '../domain/profiles/snapshot.js';
import type { CallerKey } from './auth.js';
import { requireScope } from './auth.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { PAGE_LIMIT } from './schemas.js';

/** Names of the traits a rule tests, at any depth. */
function traitsOf(rule: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(rule)) for (const r of rule) traitsOf(r, out);
  else if (rule && typeof rule === 'object') {
    const o = rule as Record<string, unknown>;
    if (typeof o.trait === 'string') out.add(o.trait);
    for (const v of Object.values(o)) if (v && typeof v === 'object') traitsOf(v, out);
  }
  return out;
}

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
  const pii = [...traitsOf(rule)].filter((t) => PII_TRAITS.has(t));
  if (pii.length > 0) requireScope(key, 'profile:read:pii', `a rule testing ${pii.join(', ')}`);
  // The company node is company-level (one-person domains never match): no profile:read:pii needed.
  if (usesCompany(rule)) await ensureCompanyIndex(store, key.siteId);
  const fingerprint = createHash('sha256').update(JSON.stringify(rule)).digest('hex').slice(0, 16);
  const cursor = decodeCursor(body.cursor);
  if (cursor && cursor.rule !== fingerprint) throw new AppError('bad_request', 'cursor belongs to another rule', { field: 'cursor' });
  const now = typeof cursor?.now === 'number' ? cursor.now : Date.now();
  const limit = body.limit ?? PAGE_LIMIT.default;
  const { sql, params } = profilesMatchingSql(rule, {
    siteId: key.siteId,
    now,
    afterId: (cursor?.after as string | undefined) ?? '',
    limit: limit + 1,
    dialect: store.dialect,
  });
  const ids = (await store.segments.all<{ id: string }>(sql, params)).map((r) => r.id);
  const page = ids.slice(0, limit);
  return {
    profile_ids: page,
    next_cursor: ids.length > limit ? encodeCursor({ rule: fingerprint, now, after: page[page.length - 1]! }) : null,
    evaluated_at: new Date(now).toISOString(),
  };
}
