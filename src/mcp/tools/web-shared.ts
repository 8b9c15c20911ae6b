import { z } from 'zod';
import type { ToolContext } from '../tool.js';

/** Input fields and helpers shared by the web-experience tool files (pages, zones, content, variants, placements, overrides); their views live in domain/web/views.ts. */

/** Who made a change, as recorded in set_by, created_by, approved_by and published_by. */
export const actor = (ctx: ToolContext): string => `token:${ctx.grant.tokenId}`;

export const idInput = (what: string) => z.string().min(1).max(128).describe(what);
export const nameInput = z.string().trim().min(1).max(200).describe('Display name, 1 to 200 characters.');
