import { z } from 'zod';

/**
 * A generation template. Each section (zone) is rendered from an HTML template
 * with placeholders:
 *
 *   {{page.name}} {{page.pattern}} {{zone.name}} {{segment.name}} ("everyone" without a segment)
 *   {{trait.NAME}}      the value the segment's rule requires for trait NAME ('' when it names none)
 *   {{content.NAME}}    the body of the site's content block named NAME (must exist)
 *   {{headline}}        template.headline, or a headline the generator writes
 *   {{best_content}}    the content block the generator finds most relevant to the zone and segment
 *
 * Text values are HTML-escaped; content bodies are inserted as HTML (JSON blocks as escaped text).
 * The rendered section is sanitized like any content block.
 */
export const templateSchema = z.strictObject({
  sections: z
    .record(z.string().min(1).max(64), z.string().max(20_000))
    .default({})
    .describe('Per zone name, the HTML template of that section (placeholders in {{...}}).'),
  default_section: z
    .string()
    .max(20_000)
    .optional()
    .describe('Template of every zone without its own; default: a headline, the traits line and the best content block.'),
  headline: z.string().max(200).optional().describe('The {{headline}} text; default: one the generator writes.'),
  zones: z.array(z.string().min(1).max(64)).max(100).optional().describe('Generate only these zones (by name); default: every zone of the page.'),
});
export type Template = z.output<typeof templateSchema>;

/** Template of a zone without its own section template. */
export const DEFAULT_SECTION = '<section data-generated="true"><h2>{{headline}}</h2>{{traits}}{{best_content}}</section>';

const PLACEHOLDER = /\{\{\s*([a-z_]+)(?:\.([A-Za-z0-9_.:\- ]{1,64}))?\s*\}\}/g;
const SIMPLE = new Set(['headline', 'best_content', 'traits']);
const DOTTED: Record<string, readonly string[] | null> = { page: ['name', 'pattern'], zone: ['name'], segment: ['name'], trait: null, content: null };

export interface Placeholder {
  kind: string;
  arg: string | undefined;
}

/** Every placeholder of a template string, or an error naming the first unknown one. */
export function placeholdersOf(text: string): { ok: true; found: Placeholder[] } | { ok: false; error: string } {
  const found: Placeholder[] = [];
  for (const m of text.matchAll(PLACEHOLDER)) {
    const kind = m[1]!;
    const arg = m[2]?.trim();
    if (SIMPLE.has(kind)) {
      if (arg !== undefined) return { ok: false, error: `{{${kind}}} takes no argument` };
    } else if (kind in DOTTED) {
      const allowed = DOTTED[kind];
      if (arg === undefined) return { ok: false, error: `{{${kind}.…}} needs a name` };
      if (allowed && !allowed.includes(arg)) return { ok: false, error: `unknown placeholder {{${kind}.${arg}}}` };
    } else {
      return { ok: false, error: `unknown placeholder {{${m[0].slice(2, -2).trim()}}}` };
    }
    found.push({ kind, arg });
  }
  return { ok: true, found };
}

/** Replaces every placeholder with what `value` returns for it. */
export function renderTemplate(text: string, value: (p: Placeholder) => string): string {
  return text.replace(PLACEHOLDER, (_m, kind: string, arg: string | undefined) => value({ kind, arg: arg?.trim() }));
}

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/**
 * The trait values a segment rule asks for, as generation input: `eq` values,
 * the first `in` value, and `contains`/`starts_with` strings, outside any
 * `not`. Sorted by trait name; the first condition on a trait wins.
 */
export function traitsOfRule(rule: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const n of node) walk(n);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    if ('not' in o) return;
    if (Array.isArray(o.all)) walk(o.all);
    if (Array.isArray(o.any)) walk(o.any);
    if (typeof o.trait === 'string' && !(o.trait in out)) {
      const v = o.value;
      if ((o.op === 'eq' || o.op === 'contains' || o.op === 'starts_with') && (typeof v === 'string' || typeof v === 'number')) out[o.trait] = String(v);
      else if (o.op === 'in' && Array.isArray(v) && v.length > 0) out[o.trait] = String(v[0]);
    }
  };
  walk(rule);
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
