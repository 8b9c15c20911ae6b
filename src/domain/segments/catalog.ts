import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { SegmentRow } from '../../store/segments.js';
import type { DraftView } from '../drafts/schema.js';
import { proposeSegmentCreate, proposeSegmentUpdate } from '../drafts/service.js';
import type { SegmentInput, SegmentsService } from './service.js';
import { segmentOut, siteSegmentOut, type SegmentView, type SiteSegmentView } from './views.js';

/** A segment change's result: the segment, and the draft when the change was filed for approval. */
export type SegmentChange = SegmentView & { draft?: DraftView };

/**
 * The segment use cases of one store, returning views: the MCP tools and
 * `svc segment` call these. `segments` holds the rules (validation, backfill);
 * each write runs in one write operation.
 */
export class SegmentCatalog {
  constructor(
    private readonly store: Store,
    private readonly segments: SegmentsService,
  ) {}

  private async view(row: SegmentRow): Promise<SegmentView> {
    return segmentOut(row, await this.store.segments.memberCount(row.id));
  }

  private async siteView(row: SegmentRow): Promise<SiteSegmentView> {
    return siteSegmentOut(row, await this.store.segments.memberCount(row.id));
  }

  /** Every segment of a site, highest priority first. */
  async list(siteId: string): Promise<SegmentView[]> {
    return Promise.all((await this.store.segments.list(siteId)).map((r) => this.view(r)));
  }

  async get(siteId: string, id: string): Promise<SegmentView> {
    return this.view(await this.segments.require(siteId, id));
  }

  /** How many profiles a rule matches now. */
  async preview(siteId: string, rule: unknown): Promise<{ matches: number; evaluated_at: string }> {
    return { matches: await this.segments.preview(siteId, rule), evaluated_at: new Date().toISOString() };
  }

  /** A page of member profile ids in ascending order; `after` is the previous page's next_after. */
  async members(siteId: string, id: string, after: string | undefined, limit: number): Promise<{ segment_id: string; profile_ids: string[]; next_after: string | null }> {
    const seg = await this.segments.require(siteId, id);
    const ids = await this.store.segments.members(seg.id, after ?? '', limit + 1);
    const page = ids.slice(0, limit);
    return { segment_id: seg.id, profile_ids: page, next_after: ids.length > limit ? page[page.length - 1]! : null };
  }

  /** Creates a segment and computes its members; with `propose` (a propose-only token) it is created as a draft awaiting approval. */
  async create(siteId: string, actor: string, input: SegmentInput, opts: { propose: boolean }): Promise<SegmentChange> {
    if (opts.propose) {
      const r = await proposeSegmentCreate({ store: this.store, segments: this.segments }, siteId, actor, input);
      return { ...(await this.view(r.segment)), draft: r.draft };
    }
    return this.view(await this.store.write((tx) => this.segments.create(tx, siteId, input)));
  }

  /**
   * Changes a segment and recomputes the memberships it affects. A draft segment's pending draft
   * follows every edit, whoever makes it (approval applies what the reviewer reads); with `propose`
   * a change of a live segment is filed as a draft.
   */
  async update(siteId: string, actor: string, id: string, patch: Partial<SegmentInput>, opts: { propose: boolean }): Promise<SegmentChange> {
    const seg = await this.segments.require(siteId, id);
    if (opts.propose || seg.status === 'draft') {
      const r = await proposeSegmentUpdate({ store: this.store, segments: this.segments }, siteId, actor, id, patch);
      return { ...(await this.view(r.segment)), draft: r.draft };
    }
    return this.view(await this.store.write((tx) => this.segments.update(tx, siteId, id, patch)));
  }

  /** Deletes a segment (refused while another uses it) and recomputes its former members. */
  async remove(siteId: string, id: string): Promise<{ removed: string; members: number }> {
    await this.segments.require(siteId, id);
    return this.store.write((tx) => this.segments.remove(tx, siteId, id));
  }

  // ---- across sites (svc segment) ----------------------------------------------------------

  /** Creates a segment in a site that must exist. */
  async createInSite(siteId: string, input: SegmentInput): Promise<SiteSegmentView> {
    if (!(await this.store.sites.get(siteId))) throw new AppError('not_found', `no site ${siteId}`);
    return this.siteView(await this.store.write((tx) => this.segments.create(tx, siteId, input)));
  }

  /** Every segment, or those of one site. */
  async listAll(siteId?: string): Promise<SiteSegmentView[]> {
    return Promise.all((await this.store.segments.list(siteId)).map((r) => this.siteView(r)));
  }

  async show(id: string): Promise<SiteSegmentView> {
    return this.siteView(await this.byId(id));
  }

  async removeById(id: string): Promise<{ removed: string; members: number }> {
    const row = await this.byId(id);
    return this.store.write((tx) => this.segments.remove(tx, row.site_id, id));
  }

  private async byId(id: string): Promise<SegmentRow> {
    const row = await this.store.segments.byId(id);
    if (!row) throw new AppError('not_found', `no segment ${id}`);
    return row;
  }
}
