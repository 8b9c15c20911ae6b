import type { Grant } from './grant.js';
import type { ToolDef } from './tool.js';

/** How a connection narrows tools/list: product areas (null: all) and read-only tools only. */
export interface ListingFilter {
  areas: readonly string[] | null;
  readOnly: boolean;
}

export const ALL_TOOLS: ListingFilter = { areas: null, readOnly: false };

/** Area names of a comma-separated list (`?areas=a,b`, `X-SVC-Areas: a, b`); null when absent or blank. */
export function parseAreaList(value: string | null | undefined): string[] | null {
  if (value === null || value === undefined) return null;
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return names.length === 0 ? null : [...new Set(names)];
}

/** Intersection of two optional area lists (null: no restriction). */
export function intersectAreas(a: readonly string[] | null, b: readonly string[] | null): readonly string[] | null {
  if (a === null) return b;
  if (b === null) return a;
  return a.filter((x) => b.includes(x));
}

/** Truthy query flag values: 1, true, yes (case-insensitive). */
export function flagValue(value: string | null | undefined): boolean {
  return value !== null && value !== undefined && /^(1|true|yes)$/i.test(value.trim());
}

/**
 * Whether tools/list shows a tool on this connection: within the requested
 * areas and the token's own area restriction, and read-only when the
 * connection asked for read-only tools or the token is read-only. Listing
 * only: a tool left out can still be found with tools_search and called, and
 * the policy alone decides a call.
 */
export function isListed(tool: ToolDef, grant: Grant, filter: ListingFilter): boolean {
  const areas = intersectAreas(filter.areas, grant.restrictions.areas.length > 0 ? grant.restrictions.areas : null);
  if (areas !== null && !areas.includes(tool.area)) return false;
  if ((filter.readOnly || grant.restrictions.read_only) && tool.flags.changesData) return false;
  return true;
}
