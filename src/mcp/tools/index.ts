import { scopeNamedIn } from '../describe.js';
import type { ToolDef } from '../tool.js';
import * as access from './access.js';
import * as reportLinks from './report-links.js';
import * as profiles from './profiles.js';
import * as segments from './segments.js';
import * as leads from './leads.js';
import * as conversions from './conversions.js';
import * as events from './events.js';
import * as analytics from './analytics.js';
import * as webhooks from './webhooks.js';
import * as recommendations from './recommendations.js';
import * as adplatforms from './adplatforms.js';
import * as generation from './generation.js';
import * as crawl from './crawl.js';
import * as funnels from './funnels.js';
import * as stall from './stall.js';
import * as inbox from './inbox.js';
import * as calls from './calls.js';
import * as triggers from './triggers.js';
import * as accounts from './accounts.js';
import * as sites from './sites.js';
import * as tools from './tools.js';
import * as experiments from './experiments.js';
import * as campaigns from './campaigns.js';
import * as pages from './pages.js';
import * as zones from './zones.js';
import * as content from './content.js';
import * as variants from './variants.js';
import * as placements from './placements.js';
import * as overrides from './overrides.js';

/** One module per product area; every tool a module exports is collected. Adding an area is one file and one line here. */
const AREA_MODULES: readonly Record<string, unknown>[] = [
  access,
  reportLinks,
  profiles,
  segments,
  leads,
  conversions,
  events,
  analytics,
  webhooks,
  recommendations,
  adplatforms,
  generation,
  crawl,
  funnels,
  stall,
  inbox,
  calls,
  triggers,
  accounts,
  sites,
  tools,
  experiments,
  campaigns,
  pages,
  zones,
  content,
  variants,
  placements,
  overrides,
];

function isTool(v: unknown): v is ToolDef {
  return typeof v === 'object' && v !== null && typeof (v as ToolDef).name === 'string' && typeof (v as ToolDef).handler === 'function';
}

/** Every tool of the MCP server, in a stable order (area, then name). */
export const TOOLS: readonly ToolDef[] = AREA_MODULES.flatMap((m) => Object.values(m).filter(isTool)).sort(
  (a, b) => a.area.localeCompare(b.area) || a.name.localeCompare(b.name),
);

/** The product areas a token can be limited to. */
export const AREAS: readonly string[] = [...new Set(TOOLS.map((t) => t.area))].sort();

const names = new Set<string>();
for (const t of TOOLS) {
  if (names.has(t.name)) throw new Error(`duplicate MCP tool name ${t.name}`);
  names.add(t.name);
  if (t.flags.changesData && t.scope === 'read') throw new Error(`MCP tool ${t.name} changes data but declares the read scope`);
  const named = scopeNamedIn(t.description);
  if (named !== null && named !== t.scope) throw new Error(`MCP tool ${t.name} says "Scope: ${named}." but requires the ${t.scope} scope`);
}
