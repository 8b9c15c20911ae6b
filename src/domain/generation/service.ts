import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { GenerationJobRow, RevisionRow } from '../../store/generation.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { PII_TRAITS } from '../profiles/snapshot.js';
import { CONTENT_MAX_BYTES, sanitizeContentHtml } from '../web/sanitize.js';
import { builtinGenerator, GENERATORS, type GenerationInput, type GeneratedSection } from './generator.js';
import { DEFAULT_SECTION, placeholdersOf, templateSchema, traitsOfRule, type Template } from './template.js';

/** Content blocks a generator sees at most (by name; blocks generation wrote are never material). */
export const MAX_BLOCKS = 500;

/** A section as a revision stores it: the zone, its HTML, and the content block and variant holding it. */
export const storedSectionSchema = z.object({
  zone_id: z.string().describe('The zone.'),
  zone_name: z.string().describe('The zone name when the revision was written.'),
  body: z.string().describe('The sanitized HTML of the section.'),
  content_id: z.string().describe('The content block holding the body.'),
  variant_id: z.string().describe('The draft variant (zone + segment) created for the body.'),
});
export type StoredSection = z.output<typeof storedSectionSchema>;

export function sectionsOf(rev: RevisionRow): StoredSection[] {
  return z.array(storedSectionSchema).parse(JSON.parse(rev.sections));
}

export function templateOf(job: GenerationJobRow): Template {
  return templateSchema.parse(JSON.parse(job.template));
}

/** Checks a template against a page's zones and the site's content blocks; throws validation_failed. */
function checkTemplate(template: Template, zoneNames: ReadonlySet<string>, blockNames: ReadonlySet<string>): void {
  const texts: [string, string][] = Object.entries(template.sections).map(([zone, text]) => [`template.sections.${zone}`, text]);
  texts.push(['template.default_section', template.default_section ?? DEFAULT_SECTION]);
  for (const zone of Object.keys(template.sections)) {
    if (!zoneNames.has(zone)) throw new AppError('validation_failed', `template.sections: the page has no zone ${zone}`, { field: `template.sections.${zone}` });
  }
  for (const zone of template.zones ?? []) {
    if (!zoneNames.has(zone)) throw new AppError('validation_failed', `template.zones: the page has no zone ${zone}`, { field: 'template.zones' });
  }
  for (const [field, text] of texts) {
    const p = placeholdersOf(text);
    if (!p.ok) throw new AppError('validation_failed', `${field}: ${p.error}`, { field });
    for (const ph of p.found) {
      if (ph.kind === 'content' && !blockNames.has(ph.arg ?? '')) {
        throw new AppError('validation_failed', `${field}: no content block named ${ph.arg ?? ''}`, { field });
      }
    }
  }
}

/** What generation_start asks for. */
export interface StartGeneration {
  siteId: string;
  pageId: string;
  segmentId: string | null;
  template: Template;
  seed: string;
  actor: string;
}

/** Validates a generation request and queues its job (the caller wakes the runner after this commits). */
export async function queueGeneration(store: Store, req: StartGeneration): Promise<GenerationJobRow> {
  const page = await store.generation.page(req.siteId, req.pageId);
  if (!page) throw new AppError('not_found', `no page ${req.pageId}`, { field: 'page_id' });
  if (req.segmentId !== null && !(await store.segments.get(req.siteId, req.segmentId))) {
    throw new AppError('not_found', `no segment ${req.segmentId}`, { field: 'segment_id' });
  }
  const zones = await store.generation.zones(req.siteId, page.id);
  if (zones.length === 0) throw new AppError('conflict', `page ${page.id} has no zones to generate`, { field: 'page_id' });
  const blocks = await store.generation.blocks(req.siteId, MAX_BLOCKS);
  checkTemplate(req.template, new Set(zones.map((z) => z.name)), new Set(blocks.map((b) => b.name)));
  return store.write((tx) =>
    tx.generation.insertJob({
      siteId: req.siteId,
      pageId: page.id,
      segmentId: req.segmentId,
      kind: 'generate',
      generator: builtinGenerator.name,
      template: JSON.stringify(req.template),
      seed: req.seed,
      restoreRevisionId: null,
      state: 'queued',
      requestedBy: req.actor,
      now: Date.now(),
    }),
  );
}

/** The generator's input for a job, read from the store now. */
async function inputOf(store: Store, job: GenerationJobRow): Promise<GenerationInput> {
  const page = await store.generation.page(job.site_id, job.page_id);
  if (!page) throw new Error(`page ${job.page_id} no longer exists`);
  let segment: GenerationInput['segment'] = null;
  if (job.segment_id !== null) {
    const row = await store.segments.get(job.site_id, job.segment_id);
    if (!row) throw new Error(`segment ${job.segment_id} no longer exists`);
    const traits = Object.fromEntries(Object.entries(traitsOfRule(JSON.parse(row.rule))).filter(([k]) => !PII_TRAITS.has(k)));
    segment = { id: row.id, name: row.name, traits };
  }
  return {
    page: { id: page.id, name: page.name, pattern: page.pattern },
    zones: await store.generation.zones(job.site_id, page.id),
    segment,
    blocks: await store.generation.blocks(job.site_id, MAX_BLOCKS),
    template: templateOf(job),
    seed: job.seed,
  };
}

/** Sanitizes generated sections; a section over the content size cap fails the job. */
export function cleanSections(sections: readonly GeneratedSection[]): GeneratedSection[] {
  return sections.map((s) => {
    const body = sanitizeContentHtml(s.body);
    const bytes = Buffer.byteLength(body, 'utf8');
    if (bytes > CONTENT_MAX_BYTES) throw new Error(`section ${s.zone_name} is ${bytes} bytes, over the ${CONTENT_MAX_BYTES}-byte content cap`);
    return { ...s, body };
  });
}

/**
 * Runs a claimed generation job: reads its input, generates, sanitizes and
 * lands the revision (one transaction: blocks, draft variants, revision, job
 * finished, generation.finished). Throws on failure (the runner records it).
 */
export async function runGenerationJob(store: Store, job: GenerationJobRow, signal: AbortSignal): Promise<void> {
  const generator = GENERATORS.get(job.generator);
  if (!generator) throw new Error(`unknown generator ${job.generator}`);
  const input = await inputOf(store, job);
  const sections = cleanSections(await generator.generate(input, signal));
  if (signal.aborted) return;
  const pageName = input.page.name;
  await store.write(async (tx) => {
    const cur = await tx.generation.job(job.id);
    if (cur?.state !== 'running') return;
    await land(tx, { job, pageName, audience: input.segment?.name ?? 'everyone', sections, restoredFrom: null, now: Date.now() });
  });
}

/**
 * Lands a revision inside a write operation: sections whose body differs from
 * the newest revision (of the page and audience) become a new content block
 * and a draft variant each; the others keep their block and variant. Marks the
 * job finished and emits generation.finished.
 */
export async function land(
  tx: Repos,
  r: { job: GenerationJobRow; pageName: string; audience: string; sections: readonly GeneratedSection[]; restoredFrom: string | null; now: number },
): Promise<RevisionRow> {
  const { job } = r;
  const prev = await tx.generation.latestRevision(job.page_id, job.segment_id);
  const prevSections = new Map((prev ? sectionsOf(prev) : []).map((s) => [s.zone_id, s]));
  const number = (prev?.number ?? 0) + 1;
  let generated = 0;
  const stored: StoredSection[] = [];
  for (const s of r.sections) {
    const old = prevSections.get(s.zone_id);
    if (old && old.body === s.body) {
      stored.push({ ...old, zone_name: s.zone_name });
      continue;
    }
    generated++;
    const label = `${r.pageName} / ${s.zone_name} r${number} (${r.audience})`;
    const contentId = await tx.generation.insertBlock({ siteId: job.site_id, generationId: job.id, name: `Generated: ${label}`.slice(0, 200), body: s.body, now: r.now });
    const variantId = await tx.generation.insertDraftVariant({
      siteId: job.site_id,
      zoneId: s.zone_id,
      contentId,
      segmentId: job.segment_id,
      name: `Generated ${label}`.slice(0, 200),
      createdBy: job.requested_by,
      now: r.now,
    });
    stored.push({ zone_id: s.zone_id, zone_name: s.zone_name, body: s.body, content_id: contentId, variant_id: variantId });
  }
  const rev = await tx.generation.insertRevision({
    site_id: job.site_id,
    page_id: job.page_id,
    segment_id: job.segment_id,
    number,
    generation_id: job.id,
    restored_from: r.restoredFrom,
    sections: JSON.stringify(stored),
    created_at: r.now,
  });
  const unchanged = stored.length - generated;
  await tx.generation.finish(job.id, { revisionId: rev.id, generated, unchanged, now: r.now });
  const payload = CATALOGUE['generation.finished'].schema.parse({
    event: 'generation.finished',
    site_id: job.site_id,
    generation_id: job.id,
    page_id: job.page_id,
    segment_id: job.segment_id,
    revision_id: rev.id,
    previous_revision_id: prev?.id ?? null,
    sections_generated: generated,
    sections_unchanged: unchanged,
    timestamp: new Date(r.now).toISOString(),
  });
  await tx.activity.enqueue(job.site_id, 'generation.finished', payload, r.now);
  return rev;
}

/**
 * Restores an old revision: lands a copy of its sections as the newest
 * revision of the same page and audience (as a finished `restore` job, in one
 * transaction). Zones deleted since are left out.
 */
export async function restoreRevision(store: Store, req: { siteId: string; revisionId: string; actor: string }): Promise<{ job: GenerationJobRow; revision: RevisionRow }> {
  const old = await store.generation.revision(req.siteId, req.revisionId);
  if (!old) throw new AppError('not_found', `no revision ${req.revisionId}`, { field: 'revision_id' });
  const page = await store.generation.page(req.siteId, old.page_id);
  if (!page) throw new AppError('not_found', `page ${old.page_id} of the revision no longer exists`, { field: 'revision_id' });
  const zones = new Map((await store.generation.zones(req.siteId, page.id)).map((z) => [z.id, z]));
  const sections = sectionsOf(old)
    .filter((s) => zones.has(s.zone_id))
    .map((s) => ({ zone_id: s.zone_id, zone_name: zones.get(s.zone_id)!.name, body: s.body }));
  if (sections.length === 0) throw new AppError('conflict', `none of the zones of revision ${old.id} exists any more`, { field: 'revision_id' });
  const audience = old.segment_id === null ? 'everyone' : ((await store.segments.get(req.siteId, old.segment_id))?.name ?? old.segment_id);
  return store.write(async (tx) => {
    const now = Date.now();
    const job = await tx.generation.insertJob({
      siteId: req.siteId,
      pageId: page.id,
      segmentId: old.segment_id,
      kind: 'restore',
      generator: 'restore',
      template: '{}',
      seed: '',
      restoreRevisionId: old.id,
      state: 'running',
      requestedBy: req.actor,
      now,
    });
    const revision = await land(tx, { job, pageName: page.name, audience, sections, restoredFrom: old.id, now });
    return { job: (await tx.generation.job(job.id))!, revision };
  });
}
