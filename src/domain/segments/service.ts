import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { Repos } from '../../store/repos.js';
import type { SegmentRow } from '../../store/segments.js';
import { profilesMatchingSql } from '../../store/rule-sql.js';
import { hasWindow, parseRule, referencedSegments, usesCompany, type Rule } from './rules.js';
import type { SegmentMembership } from './membership.js';
import { ensureCompanyIndex, rebuildCompanies } from '../accounts/profile-company.js';

export interface SegmentInput {
  name: string;
  rule: unknown;
  priority?: number | undefined;
}

const BACKFILL_PAGE = 5000;
/** Profiles recomputed per write transaction by refreshWindowed (keeps each pause of the event loop short). */
const REFRESH_CHUNK = 500;

/**
 * Segments of a site: validated rules (no unknown or cyclic segment
 * references), and memberships backfilled over every profile when a segment is
 * created or its rule changes. A draft segment (proposed under propose-only)
 * has no members and is evaluated nowhere until `publish` makes it live. `create`, `update` and `remove` run inside the
 * caller's write operation and take its repositories (`tx`); the reads
 * (`require`, `preview`) go to the store.
 */
export class SegmentsService {
  constructor(
    private readonly store: Store,
    private readonly membership: SegmentMembership,
  ) {}

  /** `draft`: the segment validated is a draft, which may test membership of other drafts (a live one may not). */
  private async validate(r: Repos, siteId: string, input: SegmentInput, selfId?: string, draft = false): Promise<Rule> {
    const name = input.name.trim();
    if (!name || name.length > 200) throw new AppError('validation_failed', 'name: 1 to 200 characters', { field: 'name' });
    if (input.priority !== undefined && (!Number.isInteger(input.priority) || Math.abs(input.priority) > 1_000_000)) {
      throw new AppError('validation_failed', 'priority: a whole number from -1000000 to 1000000', { field: 'priority' });
    }
    const parsed = parseRule(input.rule);
    if (!parsed.ok) {
      throw new AppError('validation_failed', `rule: ${parsed.error.path}: ${parsed.error.message}`, {
        field: `rule${parsed.error.path.slice(1)}`,
        issues: parsed.error.issues,
      });
    }
    for (const ref of referencedSegments(parsed.rule)) {
      if (ref === selfId) throw new AppError('validation_failed', 'rule: a segment cannot test membership of itself', { field: 'rule' });
      const target = await r.segments.get(siteId, ref);
      if (!target) throw new AppError('validation_failed', `rule: no segment ${ref} in this site`, { field: 'rule' });
      if (target.status === 'draft' && !draft) {
        throw new AppError('validation_failed', `rule: segment ${ref} is a draft awaiting approval; approve it first`, { field: 'rule', segment: ref });
      }
      if (selfId !== undefined && (await this.reaches(r, ref, selfId, new Set()))) {
        throw new AppError('validation_failed', `rule: segment ${ref} depends on this segment (a cycle)`, { field: 'rule' });
      }
    }
    return parsed.rule;
  }

  private async reaches(r: Repos, from: string, target: string, seen: Set<string>): Promise<boolean> {
    if (from === target) return true;
    if (seen.has(from)) return false;
    seen.add(from);
    const row = await r.segments.byId(from);
    if (!row) return false;
    const parsed = parseRule(JSON.parse(row.rule));
    if (!parsed.ok) return false;
    for (const ref of referencedSegments(parsed.rule)) {
      if (await this.reaches(r, ref, target, seen)) return true;
    }
    return false;
  }

  /** Checks a rule against the site as `create` would, without writing (a proposal is refused exactly when creating would be). */
  async check(r: Repos, siteId: string, input: SegmentInput, opts: { draft?: boolean; selfId?: string } = {}): Promise<Rule> {
    return this.validate(r, siteId, input, opts.selfId, opts.draft === true);
  }

  /**
   * Writes: call inside a write operation, with its `tx`. `draft`: the segment
   * is stored as a draft (no members computed, nothing fired) until `publish`.
   */
  async create(tx: Repos, siteId: string, input: SegmentInput, opts: { draft?: boolean } = {}): Promise<SegmentRow & { members: number }> {
    const draft = opts.draft === true;
    const rule = await this.validate(tx, siteId, input, undefined, draft);
    if ((await tx.segments.list(siteId)).some((s) => s.name === input.name.trim())) {
      throw new AppError('conflict', `a segment named ${JSON.stringify(input.name.trim())} exists in this site`, { field: 'name' });
    }
    const row = await tx.segments.create({ siteId, name: input.name.trim(), rule: JSON.stringify(rule), priority: input.priority ?? 0, status: draft ? 'draft' : 'live' });
    if (draft) return { ...row, members: 0 };
    this.membership.invalidate(siteId);
    await this.indexCompanies(tx, siteId, rule);
    const members = await this.backfill(tx, siteId, rule);
    return { ...row, members };
  }

  /**
   * Writes: call inside a write operation, with its `tx`. A draft segment is
   * changed in place and stays a draft (no members); a live one has the
   * memberships it affects recomputed.
   */
  async update(tx: Repos, siteId: string, id: string, input: Partial<SegmentInput>): Promise<SegmentRow & { members: number }> {
    const row = await this.require(siteId, id, tx);
    const merged: SegmentInput = {
      name: input.name ?? row.name,
      rule: input.rule ?? JSON.parse(row.rule),
      priority: input.priority ?? row.priority,
    };
    const draft = row.status === 'draft';
    const rule = await this.validate(tx, siteId, merged, id, draft);
    const name = merged.name.trim();
    if (name !== row.name && (await tx.segments.list(siteId)).some((s) => s.id !== id && s.name === name)) {
      throw new AppError('conflict', `a segment named ${JSON.stringify(name)} exists in this site`, { field: 'name' });
    }
    await tx.segments.update(id, { name, rule: JSON.stringify(rule), priority: merged.priority ?? 0 });
    if (draft) return { ...(await tx.segments.byId(id))!, members: 0 };
    this.membership.invalidate(siteId);
    await this.indexCompanies(tx, siteId, rule);
    const affected = new Set(await this.allMembers(tx, id));
    for (const p of await this.matching(tx, siteId, rule)) affected.add(p);
    const now = Date.now();
    for (const p of affected) await this.membership.evaluate(tx, siteId, p, now);
    return { ...(await tx.segments.byId(id))!, members: await tx.segments.memberCount(id) };
  }

  /**
   * Makes a draft segment live, exactly as it stands: its members are computed
   * over every profile, with segment.changed and triggers as for a segment
   * created live. Refused while its rule tests membership of another draft.
   * Writes: call inside a write operation, with its `tx`.
   */
  async publish(tx: Repos, siteId: string, id: string): Promise<SegmentRow & { members: number }> {
    const row = await this.require(siteId, id, tx);
    if (row.status !== 'draft') throw new AppError('conflict', `segment ${id} is already live`, { status: row.status });
    const rule = await this.validate(tx, siteId, { name: row.name, rule: JSON.parse(row.rule), priority: row.priority }, id, false);
    await tx.segments.setStatus(id, 'live');
    this.membership.invalidate(siteId);
    await this.indexCompanies(tx, siteId, rule);
    const members = await this.backfill(tx, siteId, rule);
    return { ...(await tx.segments.byId(id))!, members };
  }

  /** Before a company rule is first evaluated in a site: derives the company of every profile once (see ensureCompanyIndex). */
  private async indexCompanies(tx: Repos, siteId: string, rule: Rule): Promise<void> {
    if (!usesCompany(rule) || (await tx.companies.indexBuiltAt(siteId)) !== null) return;
    const now = Date.now();
    for (const p of await rebuildCompanies(tx, siteId, now)) await this.membership.evaluate(tx, siteId, p, now);
  }

  /** Writes: call inside a write operation, with its `tx`. */
  async remove(tx: Repos, siteId: string, id: string): Promise<{ removed: string; members: number }> {
    await this.require(siteId, id, tx);
    const dependants = (await tx.segments.list(siteId)).filter(
      (s) => s.id !== id && (() => { const p = parseRule(JSON.parse(s.rule)); return p.ok && referencedSegments(p.rule).includes(id); })(),
    );
    if (dependants.length > 0) {
      throw new AppError('conflict', `segment ${id} is used by ${dependants.map((d) => d.id).join(', ')}`, { used_by: dependants.map((d) => d.id) });
    }
    const members = await this.allMembers(tx, id);
    await tx.segments.remove(id);
    this.membership.invalidate(siteId);
    const now = Date.now();
    for (const p of members) await this.membership.evaluate(tx, siteId, p, now);
    return { removed: id, members: members.length };
  }

  /** The segment, or not_found. Reads through `r`: the store, or the `tx` of the write operation it runs in. */
  async require(siteId: string, id: string, r: Repos = this.store): Promise<SegmentRow> {
    const row = await r.segments.get(siteId, id);
    if (!row) throw new AppError('not_found', `no segment ${id}`);
    return row;
  }

  /**
   * Rules with time windows ("viewed pricing in the last 7 days") change their
   * answer as time passes, with no new data. Re-evaluates, for every site with
   * such a segment, each current member and each profile that matches now, so
   * memberships, primary segments and segment.changed follow the clock too.
   * Segments that depend on a windowed one are recomputed with it (recompute
   * covers every segment of a profile). Runs in write transactions of
   * REFRESH_CHUNK profiles; resolves with the number of profiles recomputed.
   */
  async refreshWindowed(): Promise<number> {
    const bySite = new Map<string, { segmentId: string; rule: Rule }[]>();
    for (const row of await this.store.segments.list()) {
      if (row.status !== 'live') continue;
      const parsed = parseRule(JSON.parse(row.rule));
      if (!parsed.ok || !hasWindow(parsed.rule)) continue;
      const list = bySite.get(row.site_id) ?? [];
      list.push({ segmentId: row.id, rule: parsed.rule });
      bySite.set(row.site_id, list);
    }
    let done = 0;
    for (const [siteId, windowed] of bySite) {
      const candidates = new Set<string>();
      for (const { segmentId, rule } of windowed) {
        for (const p of await this.allMembers(this.store, segmentId)) candidates.add(p);
        for (const p of await this.matching(this.store, siteId, rule)) candidates.add(p);
      }
      const ids = [...candidates];
      for (let i = 0; i < ids.length; i += REFRESH_CHUNK) {
        const chunk = ids.slice(i, i + REFRESH_CHUNK);
        await this.store.write(async (tx) => {
          const now = Date.now();
          for (const p of chunk) await this.membership.evaluate(tx, siteId, p, now);
        });
        done += chunk.length;
      }
    }
    return done;
  }

  /** How many profiles a rule matches now, without creating a segment. */
  async preview(siteId: string, ruleInput: unknown): Promise<number> {
    const rule = await this.validate(this.store, siteId, { name: 'preview', rule: ruleInput }, undefined, true);
    if (usesCompany(rule)) {
      const changed = await ensureCompanyIndex(this.store, siteId);
      if (changed.length > 0 && (await this.membership.usesCompany(this.store, siteId))) {
        await this.store.write(async (tx) => {
          const now = Date.now();
          for (const p of changed) await this.membership.evaluate(tx, siteId, p, now);
        });
      }
    }
    return (await this.matching(this.store, siteId, rule)).length;
  }

  private async matching(r: Repos, siteId: string, rule: Rule): Promise<string[]> {
    const now = Date.now();
    const out: string[] = [];
    let after = '';
    for (;;) {
      const { sql, params } = profilesMatchingSql(rule, { siteId, now, afterId: after, limit: BACKFILL_PAGE, dialect: r.sql.dialect });
      const ids = (await r.segments.all<{ id: string }>(sql, params)).map((row) => row.id);
      out.push(...ids);
      if (ids.length < BACKFILL_PAGE) return out;
      after = ids[ids.length - 1]!;
    }
  }

  private async allMembers(r: Repos, segmentId: string): Promise<string[]> {
    const out: string[] = [];
    let after = '';
    for (;;) {
      const ids = await r.segments.members(segmentId, after, BACKFILL_PAGE);
      out.push(...ids);
      if (ids.length < BACKFILL_PAGE) return out;
      after = ids[ids.length - 1]!;
    }
  }

  private async backfill(tx: Repos, siteId: string, rule: Rule): Promise<number> {
    const ids = await this.matching(tx, siteId, rule);
    const now = Date.now();
    for (const p of ids) await this.membership.evaluate(tx, siteId, p, now);
    return ids.length;
  }
}
