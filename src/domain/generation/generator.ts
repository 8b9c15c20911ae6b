import { createHash } from 'node:crypto';
import { DEFAULT_SECTION, escapeHtml, renderTemplate, type Placeholder, type Template } from './template.js';

/** Everything a generator may use: the page, its zones, the audience and the site's content blocks. */
export interface GenerationInput {
  page: { id: string; name: string; pattern: string };
  zones: readonly { id: string; name: string; selector: string }[];
  /** null: everyone. */
  segment: { id: string; name: string; traits: Readonly<Record<string, string>> } | null;
  blocks: readonly { id: string; name: string; kind: 'html' | 'json'; body: string }[];
  template: Template;
  /** Varies the output of deterministic generators; the same seed and input give the same output. */
  seed: string;
}

/** One generated section: the HTML a zone shows (sanitized by the caller before it is stored). */
export interface GeneratedSection {
  zone_id: string;
  zone_name: string;
  body: string;
}

/**
 * Writes a page's sections for an audience. The built-in generator is
 * deterministic and offline; a model-backed one implements the same
 * interface (it may be slow: it gets an abort signal for the job's shutdown).
 */
export interface Generator {
  readonly name: string;
  generate(input: GenerationInput, signal: AbortSignal): Promise<GeneratedSection[]>;
}

const HEADLINES = ['Made for {a}', 'Picked for {a}', 'Just for {a}', 'Chosen for {a}', 'Recommended for {a}', 'Selected for {a}'];

function hashOf(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex');
}

function words(s: string): string[] {
  return s
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length >= 3);
}

/**
 * Relevance of a content block to a zone and audience: +3 when the block name
 * names the zone, +2 per required trait value found in the block's name or
 * body, +1 per word of the segment name found in the block name.
 */
export function blockScore(block: GenerationInput['blocks'][number], zoneName: string, segment: GenerationInput['segment']): number {
  const name = block.name.toLowerCase();
  const body = block.body.toLowerCase();
  let score = 0;
  if (name.includes(zoneName.toLowerCase())) score += 3;
  if (segment) {
    for (const v of Object.values(segment.traits)) {
      const t = v.toLowerCase();
      if (t.length > 0 && (name.includes(t) || body.includes(t))) score += 2;
    }
    for (const w of words(segment.name)) if (name.includes(w)) score += 1;
  }
  return score;
}

function blockHtml(block: GenerationInput['blocks'][number]): string {
  return block.kind === 'html' ? block.body : `<pre>${escapeHtml(block.body)}</pre>`;
}

/**
 * The built-in generator (`builtin-v1`): renders each zone's template, writing
 * the headline from a fixed phrase list and picking the best content block by
 * blockScore, ties broken by a hash of the seed, zone and block id. No network,
 * no clock, no randomness: the same input gives the same sections.
 */
export const builtinGenerator: Generator = {
  name: 'builtin-v1',
  generate(input) {
    const audience = input.segment?.name ?? 'everyone';
    const names = input.template.zones;
    const zones = input.zones.filter((z) => names === undefined || names.includes(z.name));
    const sections = zones.map((zone) => {
      const h = hashOf(input.seed, input.page.id, zone.id, input.segment?.id ?? '');
      const headline = input.template.headline ?? HEADLINES[parseInt(h.slice(0, 8), 16) % HEADLINES.length]!.replace('{a}', audience);
      const ranked = input.blocks
        .map((b) => ({ b, score: blockScore(b, zone.name, input.segment), tie: hashOf(input.seed, zone.id, b.id) }))
        .sort((x, y) => y.score - x.score || (x.tie < y.tie ? -1 : x.tie > y.tie ? 1 : 0));
      const best = ranked[0]?.b;
      const traits = Object.entries(input.segment?.traits ?? {});
      const value = (p: Placeholder): string => {
        switch (p.kind) {
          case 'headline':
            return escapeHtml(headline);
          case 'best_content':
            return best ? blockHtml(best) : '';
          case 'traits':
            return traits.length === 0 ? '' : `<p class="svc-traits">${traits.map(([k, v]) => `${escapeHtml(k)}: ${escapeHtml(v)}`).join(', ')}</p>`;
          case 'page':
            return escapeHtml(p.arg === 'pattern' ? input.page.pattern : input.page.name);
          case 'zone':
            return escapeHtml(zone.name);
          case 'segment':
            return escapeHtml(audience);
          case 'trait':
            return escapeHtml(input.segment?.traits[p.arg ?? ''] ?? '');
          case 'content': {
            const block = input.blocks.find((b) => b.name === p.arg);
            return block ? blockHtml(block) : '';
          }
          default:
            return '';
        }
      };
      const text = input.template.sections[zone.name] ?? input.template.default_section ?? DEFAULT_SECTION;
      return { zone_id: zone.id, zone_name: zone.name, body: renderTemplate(text, value) };
    });
    return Promise.resolve(sections);
  },
};

/** Generators by name (a job records the name it was started with). */
export const GENERATORS: ReadonlyMap<string, Generator> = new Map([[builtinGenerator.name, builtinGenerator]]);
