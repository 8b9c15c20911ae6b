import { z } from 'zod';
import { ContentService } from '../../domain/web/content.js';
import { contentUsageView, contentView } from '../../domain/web/views.js';
import { CONTENT_MAX_BYTES } from '../../domain/web/sanitize.js';
import { defineTool } from '../tool.js';
import { actor, idInput, nameInput } from './web-shared.js';

const area = 'content';

const kind = z.enum(['html', 'json']).describe('html: an HTML fragment, sanitized (no scripts, event handlers or javascript: URLs); json: any JSON value as text.');
const body = z.string().describe(`The body, at most ${CONTENT_MAX_BYTES} bytes (64 KiB) in UTF-8.`);
const written = contentView.extend({ sanitized: z.boolean().describe('Whether the sanitizer removed something from the HTML given.') });

export const contentList = defineTool({
  name: 'content_list',
  title: 'List content',
  description: 'Content blocks of the site by name, optionally of one kind. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ kind: kind.optional() }),
  output: z.object({ content: z.array(contentView).describe('The content blocks.') }),
  handler: async (ctx, input) => ({ content: await new ContentService(ctx.store).list(ctx.grant.siteId, input.kind) }),
});

export const contentGet = defineTool({
  name: 'content_get',
  title: 'Read content',
  description: 'One content block with its body. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: idInput('Content id (cnt_...).') }),
  output: contentView,
  handler: (ctx, input) => new ContentService(ctx.store).get(ctx.grant.siteId, input.id),
});

export const contentCreate = defineTool({
  name: 'content_create',
  title: 'Create content',
  description: 'Creates a reusable content block: an HTML fragment (sanitized) or JSON, at most 64 KiB. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ name: nameInput, kind, body }),
  output: written,
  handler: (ctx, input) => new ContentService(ctx.store).create(ctx.grant.siteId, input),
});

export const contentUpdate = defineTool({
  name: 'content_update',
  title: 'Change content',
  description:
    'Changes the name, kind or body of a content block; zones and variants using it show the new body at once. A propose-only token may change the body only of content that no zone default and no approved, published or disabled variant uses. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: idInput('Content id (cnt_...).'), name: nameInput.optional(), kind: kind.optional(), body: body.optional() }),
  output: written,
  handler: async (ctx, input) => {
    const { id, ...patch } = input;
    return new ContentService(ctx.store).update(ctx.grant.siteId, id, patch, { proposeOnly: ctx.grant.restrictions.propose_only });
  },
});

export const contentDelete = defineTool({
  name: 'content_delete',
  title: 'Delete content',
  description:
    'Deletes a content block. Refused while zones or variants use it unless force is true: then zone defaults are cleared and the variants showing it are deleted with their placements (never a variant that is an experiment arm). Needs the admin scope (SPEC: deleting content is admin). Scope: admin.',
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ id: idInput('Content id (cnt_...).'), force: z.boolean().default(false).describe('Delete even when in use.') }),
  output: z.object({ removed: z.string().describe('The deleted content id.'), was_used_by: contentUsageView.describe('What used it (cleared or deleted).') }),
  handler: (ctx, input) => new ContentService(ctx.store).remove(ctx.grant.siteId, input.id, input.force, actor(ctx)),
});

export const contentUsageTool = defineTool({
  name: 'content_usage',
  title: 'Where content is used',
  description: 'The zones (as default) and variants that show a content block. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: idInput('Content id (cnt_...).') }),
  output: contentUsageView.extend({ content_id: z.string().describe('The content.') }),
  handler: (ctx, input) => new ContentService(ctx.store).usage(ctx.grant.siteId, input.id),
});
