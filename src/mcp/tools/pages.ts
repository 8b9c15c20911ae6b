import { z } from 'zod';
import { PagesService } from '../../domain/web/pages.js';
import { pageView, zoneView } from '../../domain/web/views.js';
import { defineTool } from '../tool.js';
import { actor, idInput, nameInput } from './web-shared.js';

const area = 'pages';

const matchType = z
  .enum(['exact', 'prefix', 'glob'])
  .describe(
    'exact: the path equals the pattern (a pattern with ?query must equal path+query); prefix: the path starts with it; glob: * is any run but "/", ** any run.',
  );
const pattern = z.string().min(1).max(2048).describe('A URL path pattern starting with "/", e.g. /pricing, /blog/, /products/*.');

export const pagesList = defineTool({
  name: 'pages_list',
  title: 'List pages',
  description: 'Every page (URL pattern) of the site, by name. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: z.object({ pages: z.array(pageView).describe('The pages.') }),
  handler: async (ctx) => ({ pages: await new PagesService(ctx.store).list(ctx.grant.siteId) }),
});

export const pagesGet = defineTool({
  name: 'pages_get',
  title: 'Read a page',
  description: 'One page with its zones. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: idInput('Page id (page_...).') }),
  output: pageView.extend({ zones: z.array(zoneView).describe('Zones of the page.') }),
  handler: (ctx, input) => new PagesService(ctx.store).get(ctx.grant.siteId, input.id),
});

export const pagesCreate = defineTool({
  name: 'pages_create',
  title: 'Create a page',
  description: 'Creates a page: a URL pattern (exact, prefix or glob) whose zones the decision fills. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ name: nameInput, match_type: matchType, pattern }),
  output: pageView,
  handler: (ctx, input) => new PagesService(ctx.store).create(ctx.grant.siteId, input),
});

export const pagesUpdate = defineTool({
  name: 'pages_update',
  title: 'Change a page',
  description: 'Changes the name, match type or pattern of a page. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: idInput('Page id (page_...).'), name: nameInput.optional(), match_type: matchType.optional(), pattern: pattern.optional() }),
  output: pageView,
  handler: async (ctx, input) => {
    const { id, ...patch } = input;
    return new PagesService(ctx.store).update(ctx.grant.siteId, id, patch);
  },
});

export const pagesDelete = defineTool({
  name: 'pages_delete',
  title: 'Delete a page',
  description: 'Deletes a page (refused while it has zones or experiments); lifts its personalization_off overrides. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ id: idInput('Page id (page_...).') }),
  output: z.object({ removed: z.string().describe('The deleted page id.') }),
  handler: (ctx, input) => new PagesService(ctx.store).remove(ctx.grant.siteId, input.id, actor(ctx)),
});
