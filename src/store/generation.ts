import type { Sql } from './sql.js';
import { JobRows } from './job-rows.js';
import { newId } from './ids.js';

export type JobState = 'queued' | 'running' | 'finished' | 'failed';

export interface GenerationJobRow {
  id: string;
  site_id: string;
  page_id: string;
  segment_id: string | null;
  kind: 'generate' | 'restore';
  generator: string;
  template: string;
  seed: string;
  restore_revision_id: string | null;
  state: JobState;
  error: string | null;
  revision_id: string | null;
  sections_generated: number;
  sections_unchanged: number;
  attempts: number;
  lease_until: number;
  requested_by: string;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface RevisionRow {
  id: string;
  site_id: string;
  page_id: string;
  segment_id: string | null;
  segment_key: string;
  number: number;
  generation_id: string;
  restored_from: string | null;
  /** JSON array of stored sections (see domain/generation). */
  sections: string;
  created_at: number;
}

export interface GenPageRow {
  id: string;
  site_id: string;
  name: string;
  match_type: string;
  pattern: string;
}

export interface GenZoneRow {
  id: string;
  name: string;
  selector: string;
}

export interface GenBlockRow {
  id: string;
  name: string;
  kind: 'html' | 'json';
  body: string;
}

const JOB = 'SELECT * FROM generation_jobs WHERE id = ?';

/** Segment key of a revision: the segment id, or '' for everyone. */
export const segmentKey = (segmentId: string | null): string => segmentId ?? '';

/**
 * Generation jobs and page revisions, plus the reads and writes of the shared
 * web-experience tables generation needs (pages, zones, content blocks, draft
 * variants). Methods that write must run inside a write operation.
 */
export class GenerationRepo {
  /** The job rows' lease protocol (claim, renew, release, fail). */
  readonly jobs: JobRows<GenerationJobRow>;

  constructor(private readonly x: Sql) {
    this.jobs = new JobRows<GenerationJobRow>(x, 'generation_jobs');
  }

  async insertJob(j: {
    siteId: string;
    pageId: string;
    segmentId: string | null;
    kind: 'generate' | 'restore';
    generator: string;
    template: string;
    seed: string;
    restoreRevisionId: string | null;
    state: JobState;
    requestedBy: string;
    now: number;
  }): Promise<GenerationJobRow> {
    const id = newId('gen');
    await this.x.run(
      `INSERT INTO generation_jobs (id, site_id, page_id, segment_id, kind, generator, template, seed, restore_revision_id, state, requested_by, created_at, started_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [id, j.siteId, j.pageId, j.segmentId, j.kind, j.generator, j.template, j.seed, j.restoreRevisionId, j.state, j.requestedBy, j.now, j.state === 'queued' ? null : j.now],
    );
    return (await this.job(id))!;
  }

  job(id: string): Promise<GenerationJobRow | undefined> {
    return this.x.get<GenerationJobRow>(JOB, [id]);
  }

  jobOfSite(siteId: string, id: string): Promise<GenerationJobRow | undefined> {
    return this.x.get<GenerationJobRow>('SELECT * FROM generation_jobs WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async finish(id: string, r: { revisionId: string; generated: number; unchanged: number; now: number }): Promise<void> {
    await this.x.run(
      "UPDATE generation_jobs SET state = 'finished', error = NULL, revision_id = ?, sections_generated = ?, sections_unchanged = ?, finished_at = ?, lease_until = 0 WHERE id = ?",
      [r.revisionId, r.generated, r.unchanged, r.now, id],
    );
  }

  latestRevision(pageId: string, segmentId: string | null): Promise<RevisionRow | undefined> {
    return this.x.get<RevisionRow>('SELECT * FROM page_revisions WHERE page_id = ? AND segment_key = ? ORDER BY number DESC LIMIT 1', [
      pageId,
      segmentKey(segmentId),
    ]);
  }

  revision(siteId: string, id: string): Promise<RevisionRow | undefined> {
    return this.x.get<RevisionRow>('SELECT * FROM page_revisions WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  /** Revisions of a page for one audience (segment, or everyone), newest first. */
  revisions(siteId: string, pageId: string, segmentId: string | null, limit: number): Promise<RevisionRow[]> {
    return this.x.all<RevisionRow>(
      'SELECT * FROM page_revisions WHERE site_id = ? AND page_id = ? AND segment_key = ? ORDER BY number DESC LIMIT ?',
      [siteId, pageId, segmentKey(segmentId), limit],
    );
  }

  async insertRevision(r: Omit<RevisionRow, 'id' | 'segment_key'>): Promise<RevisionRow> {
    const id = newId('rev');
    await this.x.run(
      `INSERT INTO page_revisions (id, site_id, page_id, segment_id, segment_key, number, generation_id, restored_from, sections, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [id, r.site_id, r.page_id, r.segment_id, segmentKey(r.segment_id), r.number, r.generation_id, r.restored_from, r.sections, r.created_at],
    );
    return (await this.x.get<RevisionRow>('SELECT * FROM page_revisions WHERE id = ?', [id]))!;
  }

  page(siteId: string, id: string): Promise<GenPageRow | undefined> {
    return this.x.get<GenPageRow>('SELECT id, site_id, name, match_type, pattern FROM pages WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  zones(siteId: string, pageId: string): Promise<GenZoneRow[]> {
    return this.x.all<GenZoneRow>('SELECT id, name, selector FROM zones WHERE site_id = ? AND page_id = ? ORDER BY name, id', [siteId, pageId]);
  }

  /** The site's content blocks that generation did not write (the generator's material), by name then id; at most `limit`. */
  blocks(siteId: string, limit: number): Promise<GenBlockRow[]> {
    return this.x.all<GenBlockRow>(
      `SELECT id, name, kind, body FROM content_blocks c WHERE site_id = ?
         AND NOT EXISTS (SELECT 1 FROM generated_blocks g WHERE g.content_id = c.id)
       ORDER BY name, id LIMIT ?`,
      [siteId, limit],
    );
  }

  /** A content block holding a generated section (remembered as generated). */
  async insertBlock(b: { siteId: string; generationId: string; name: string; body: string; now: number }): Promise<string> {
    const id = newId('cnt');
    await this.x.run("INSERT INTO content_blocks (id, site_id, name, kind, body, created_at, updated_at) VALUES (?, ?, ?, 'html', ?, ?, ?)", [
      id,
      b.siteId,
      b.name,
      b.body,
      b.now,
      b.now,
    ]);
    await this.x.run('INSERT INTO generated_blocks (content_id, site_id, generation_id) VALUES (?, ?, ?)', [id, b.siteId, b.generationId]);
    return id;
  }

  /** A draft variant: never approved or published here (a human does that). */
  async insertDraftVariant(v: { siteId: string; zoneId: string; contentId: string; segmentId: string | null; name: string; createdBy: string; now: number }): Promise<string> {
    const id = newId('var');
    await this.x.run(
      `INSERT INTO variants (id, site_id, zone_id, content_id, segment_id, name, status, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'draft', ?, ?, ?)`,
      [id, v.siteId, v.zoneId, v.contentId, v.segmentId, v.name, v.createdBy, v.now, v.now],
    );
    return id;
  }
}
