import { z } from 'zod';
import { createPage, deletePage, requirePage, updatePage } from '../../domain/web/service.js';
import { defineTool } from '../tool.js';
import { actor, change, idInput, nameInput, pageOut, pageView, zoneOut, zoneView } from './web-shared.js';

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
  handler: async (ctx) => ({ pages: (await ctx.store.web.listPages(ctx.grant.siteId)).map(pageOut) }),
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
  handler: async (ctx, input) => {
    const page = await requirePage(ctx.store, ctx.grant.siteId, input.id);
    const zones = await ctx.store.web.listZones(ctx.grant.siteId, page.id);
    return { ...pageOut(page), zones: zones.map(zoneOut) };
  },
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
  handler: async (ctx, input) => pageOut(await change(ctx, (tx, now) => createPage(tx, ctx.grant.siteId, input, now))),
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
    return pageOut(await change(ctx, (tx, now) => updatePage(tx, ctx.grant.siteId, id, patch, now)));
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
  handler: async (ctx, input) => {
    await change(ctx, (tx, now) => deletePage(tx, ctx.grant.siteId, input.id, actor(ctx), now));
    return { removed: input.id };
  },
});
