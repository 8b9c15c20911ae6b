import type { Tool } from '@modelcontextprotocol/server';
import type { Grant } from '../domain/access/grant.js';
import type { ToolDef } from './tool.js';

/**
 * How a connection shapes tools/list: product areas (null: all), read-only
 * tools only, and whether each tool's output schema is included (off by
 * default: they were two thirds of the listing; tools_describe always has it).
 */
export interface ListingFilter {
  areas: readonly string[] | null;
  readOnly: boolean;
  outputSchemas: boolean;
}

export const ALL_TOOLS: ListingFilter = { areas: null, readOnly: false, outputSchemas: false };

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
export function isListed(tool: ToolDef, grant: Grant, filter: Pick<ListingFilter, 'areas' | 'readOnly'>): boolean {
  const areas = intersectAreas(filter.areas, grant.restrictions.areas.length > 0 ? grant.restrictions.areas : null);
  if (areas !== null && !areas.includes(tool.area)) return false;
  if ((filter.readOnly || grant.restrictions.read_only) && tool.flags.changesData) return false;
  return true;
}

/** Listings kept at most: one per restriction set in use (area lists could otherwise grow it without bound). */
const LISTINGS_MAX = 64;
const listings = new Map<string, unknown>();

/**
 * The tools/list result of a restriction set (the connection's filter and the
 * token's own areas and read-only flag), computed once per process: the
 * registry does not change while it runs, and a token's restrictions are part
 * of the key, so a token with other restrictions gets its own listing.
 */
export async function cachedListing<T>(grant: Grant, filter: ListingFilter, compute: () => Promise<T>): Promise<T> {
  const key = JSON.stringify([filter.areas, filter.readOnly, filter.outputSchemas, grant.restrictions.areas, grant.restrictions.read_only]);
  const hit = listings.get(key);
  if (hit !== undefined) return hit as T;
  const value = await compute();
  if (listings.size >= LISTINGS_MAX) listings.delete(listings.keys().next().value!);
  listings.set(key, value);
  return value;
}

/** JSON Schema formats a client knows by name: zod writes its own regex beside them as `pattern`, 420 bytes for a date-time. */
const NAMED_FORMATS = new Set(['date-time', 'date', 'time', 'email', 'uuid', 'uri', 'ipv4', 'ipv6']);

/**
 * A JSON Schema without the `pattern` zod writes beside a standard `format`
 * (the format already says it, tools_describe keeps both, and the server
 * validates every call with the zod schema itself). Returns the node itself
 * when nothing under it changes.
 */
export function withoutFormatPatterns(node: unknown): unknown {
  if (Array.isArray(node)) {
    const out = node.map(withoutFormatPatterns);
    return out.some((x, i) => x !== node[i]) ? out : node;
  }
  if (node === null || typeof node !== 'object') return node;
  const obj = node as Record<string, unknown>;
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    // In a `properties` map `format` would be a schema object, never a string: an argument named "pattern" stays.
    if (k === 'pattern' && typeof obj.format === 'string' && NAMED_FORMATS.has(obj.format)) {
      changed = true;
      continue;
    }
    const w = withoutFormatPatterns(v);
    if (w !== v) changed = true;
    out[k] = w;
  }
  return changed ? out : node;
}

/**
 * The annotations a client needs: the title only when it differs from the
 * tool's, and idempotentHint only when it says something (true on a tool that
 * changes data; it means nothing on a read-only tool, and false is its
 * default). readOnlyHint, destructiveHint and openWorldHint stay explicit:
 * destructiveHint and openWorldHint default to true.
 */
function compactAnnotations(tool: Tool): Tool['annotations'] {
  const { title, idempotentHint, ...rest } = tool.annotations!;
  const out: NonNullable<Tool['annotations']> = { ...rest };
  if (title !== undefined && title !== tool.title) out.title = title;
  if (idempotentHint === true && rest.readOnlyHint !== true) out.idempotentHint = true;
  return out;
}

/**
 * A listed tool without what costs context and says nothing: the input
 * schema's `$schema` (2020-12 is the dialect MCP assumes without one), the
 * `pattern` beside a standard format, annotations at their meaning-free
 * values, and the output schema unless asked for.
 */
export function compactListed(tool: Tool, outputSchemas: boolean): Tool {
  const { outputSchema, ...rest } = tool;
  const { $schema: _dialect, ...inputSchema } = tool.inputSchema;
  const out: Tool = { ...rest, inputSchema: withoutFormatPatterns(inputSchema) as Tool['inputSchema'] };
  if (tool.annotations) out.annotations = compactAnnotations(tool);
  if (outputSchemas && outputSchema) out.outputSchema = outputSchema;
  return out;
}
