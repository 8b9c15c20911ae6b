import { describe, expect, it } from 'vitest';
import { builtinGenerator, blockScore, type GenerationInput } from '../../src/domain/generation/generator.js';
import { diffSections, lineDiff, MAX_DIFF_LINES } from '../../src/domain/generation/diff.js';
import { placeholdersOf, templateSchema, traitsOfRule } from '../../src/domain/generation/template.js';
import { cleanSections } from '../../src/domain/generation/service.js';
import { sanitizeContentHtml } from '../../src/domain/web/sanitize.js';

const signal = new AbortController().signal;

function input(over: Partial<GenerationInput> = {}): GenerationInput {
  return {
    page: { id: 'page_1', name: 'Pricing', pattern: '/pricing' },
    zones: [
      { id: 'zone_hero', name: 'hero', selector: '#hero' },
      { id: 'zone_cta', name: 'cta', selector: '#cta' },
    ],
    segment: { id: 'seg_1', name: 'Gold buyers', traits: { plan: 'gold' } },
    blocks: [
      { id: 'cnt_a', name: 'Generic banner', kind: 'html', body: '<p>Welcome</p>' },
      { id: 'cnt_b', name: 'Gold offer', kind: 'html', body: '<p>Gold members save 20%</p>' },
      { id: 'cnt_c', name: 'hero image', kind: 'html', body: '<p>Hero for the gold plan</p>' },
      { id: 'cnt_d', name: 'specs', kind: 'json', body: '{"a":"<b>"}' },
    ],
    template: templateSchema.parse({}),
    seed: '',
    ...over,
  };
}

describe('built-in generator', () => {
  it('gives the same sections for the same input, every time', async () => {
    const a = await builtinGenerator.generate(input(), signal);
    const b = await builtinGenerator.generate(structuredClone(input()), signal);
    expect(b).toEqual(a);
    expect(a.map((s) => s.zone_name)).toEqual(['hero', 'cta']);
  });

  it('changes its choices with the seed, deterministically', async () => {
    const outs = new Set<string>();
    for (let i = 0; i < 12; i++) outs.add((await builtinGenerator.generate(input({ seed: `s${i}` }), signal))[0]!.body);
    expect(outs.size).toBeGreaterThan(1);
    const again = await builtinGenerator.generate(input({ seed: 's3' }), signal);
    expect(again[0]!.body).toBe((await builtinGenerator.generate(input({ seed: 's3' }), signal))[0]!.body);
  });

  it('picks the block that names the zone or carries the segment traits', async () => {
    const [hero, cta] = await builtinGenerator.generate(input(), signal);
    // hero: "hero image" names the zone (+3) and its body has the trait value (+2): 5 against "Gold offer" 3.
    expect(hero!.body).toContain('<p>Hero for the gold plan</p>');
    expect(cta!.body).toContain('Gold members save 20%');
    expect(hero!.body).toContain('<p class="svc-traits">plan: gold</p>');
    expect(blockScore(input().blocks[1]!, 'cta', input().segment)).toBe(3);
    expect(blockScore(input().blocks[0]!, 'cta', input().segment)).toBe(0);
    expect(blockScore(input().blocks[2]!, 'hero', input().segment)).toBe(5);
    expect(blockScore(input().blocks[2]!, 'cta', input().segment)).toBe(2);
  });

  it('renders placeholders, escaping text and inserting JSON blocks as text', async () => {
    const template = templateSchema.parse({
      sections: { hero: '<h1>{{headline}}</h1><p>{{segment.name}} on {{page.name}} ({{page.pattern}}), zone {{zone.name}}, plan {{trait.plan}}, x{{trait.none}}x</p>{{content.specs}}' },
      headline: 'Hi <there>',
      zones: ['hero'],
    });
    const out = await builtinGenerator.generate(input({ template }), signal);
    expect(out).toHaveLength(1);
    expect(out[0]!.body).toBe('<h1>Hi &lt;there&gt;</h1><p>Gold buyers on Pricing (/pricing), zone hero, plan gold, xx</p><pre>{&quot;a&quot;:&quot;&lt;b&gt;&quot;}</pre>');
  });

  it('writes for everyone without a segment', async () => {
    const out = await builtinGenerator.generate(input({ segment: null, template: templateSchema.parse({ default_section: '{{segment.name}}|{{traits}}' }) }), signal);
    expect(out.map((s) => s.body)).toEqual(['everyone|', 'everyone|']);
  });
});

describe('templates', () => {
  it('accepts known placeholders and names the first unknown one', () => {
    expect(placeholdersOf('{{ headline }} {{trait.plan}} {{content.Gold offer}}')).toEqual({
      ok: true,
      found: [
        { kind: 'headline', arg: undefined },
        { kind: 'trait', arg: 'plan' },
        { kind: 'content', arg: 'Gold offer' },
      ],
    });
    expect(placeholdersOf('{{page.secret}}')).toEqual({ ok: false, error: 'unknown placeholder {{page.secret}}' });
    expect(placeholdersOf('{{script}}')).toEqual({ ok: false, error: 'unknown placeholder {{script}}' });
    expect(placeholdersOf('{{trait}}')).toMatchObject({ ok: false });
    expect(placeholdersOf('{{headline.x}}')).toMatchObject({ ok: false });
  });

  it('reads trait values from a segment rule, outside `not`', () => {
    expect(
      traitsOfRule({
        all: [
          { trait: 'plan', op: 'eq', value: 'gold' },
          { any: [{ trait: 'country', op: 'in', value: ['FR', 'DE'] }, { trait: 'plan', op: 'eq', value: 'silver' }] },
          { not: { trait: 'churned', op: 'eq', value: 'yes' } },
          { trait: 'age', op: 'gte', value: 30 },
          { event: 'add_to_cart' },
        ],
      }),
    ).toEqual({ country: 'FR', plan: 'gold' });
    expect(traitsOfRule({ event: 'x' })).toEqual({});
  });
});

describe('sanitizing generated sections', () => {
  it('removes scripts, event handlers and javascript: URLs', () => {
    expect(sanitizeContentHtml('<p onclick="x()">Hi<script>alert(1)</script><a href="javascript:alert(1)">a</a><img src="https://x/i.png" onerror="y()"></p>')).toBe(
      '<p>Hi<a>a</a><img src="https://x/i.png" /></p>',
    );
    expect(cleanSections([{ zone_id: 'z', zone_name: 'hero', body: '<section><iframe src="https://evil"></iframe>ok</section>' }])[0]!.body).toBe('<section>ok</section>');
  });

  it('fails a section over the size cap', () => {
    expect(() => cleanSections([{ zone_id: 'z', zone_name: 'hero', body: `<p>${'x'.repeat(64 * 1024)}</p>` }])).toThrow(/over the 65536-byte content cap/);
  });
});

describe('line diff', () => {
  it('keeps common lines and reports removals before additions', () => {
    expect(lineDiff('a\nb\nc', 'a\nx\nc\nd')).toEqual([
      { op: 'keep', text: 'a' },
      { op: 'remove', text: 'b' },
      { op: 'add', text: 'x' },
      { op: 'keep', text: 'c' },
      { op: 'add', text: 'd' },
    ]);
    expect(lineDiff('', '')).toEqual([]);
    expect(lineDiff('', 'a')).toEqual([{ op: 'add', text: 'a' }]);
    expect(lineDiff('a', '')).toEqual([{ op: 'remove', text: 'a' }]);
    expect(lineDiff('same\ntext', 'same\ntext').every((l) => l.op === 'keep')).toBe(true);
  });

  it('replays to both texts', () => {
    const a = Array.from({ length: 60 }, (_, i) => `line ${i % 7} ${i % 3}`).join('\n');
    const b = Array.from({ length: 55 }, (_, i) => `line ${i % 5} ${i % 3}`).join('\n');
    const d = lineDiff(a, b);
    expect(d.filter((l) => l.op !== 'add').map((l) => l.text).join('\n')).toBe(a);
    expect(d.filter((l) => l.op !== 'remove').map((l) => l.text).join('\n')).toBe(b);
  });

  it('treats texts over the line limit as one changed block', () => {
    const big = Array.from({ length: MAX_DIFF_LINES + 1 }, (_, i) => String(i)).join('\n');
    const d = lineDiff(big, 'x');
    expect(d.filter((l) => l.op === 'remove')).toHaveLength(MAX_DIFF_LINES + 1);
    expect(d.at(-1)).toEqual({ op: 'add', text: 'x' });
  });

  it('compares revisions zone by zone', () => {
    const from = [
      { zone_id: 'z1', zone_name: 'a', body: 'one' },
      { zone_id: 'z2', zone_name: 'b', body: 'two' },
      { zone_id: 'z3', zone_name: 'c', body: 'three' },
    ];
    const to = [
      { zone_id: 'z1', zone_name: 'a', body: 'one' },
      { zone_id: 'z2', zone_name: 'b', body: 'TWO' },
      { zone_id: 'z4', zone_name: 'd', body: 'four' },
    ];
    expect(diffSections(from, to)).toEqual([
      { zone_id: 'z1', zone_name: 'a', change: 'unchanged', lines: [] },
      { zone_id: 'z2', zone_name: 'b', change: 'changed', lines: [{ op: 'remove', text: 'two' }, { op: 'add', text: 'TWO' }] },
      { zone_id: 'z3', zone_name: 'c', change: 'removed', lines: [{ op: 'remove', text: 'three' }] },
      { zone_id: 'z4', zone_name: 'd', change: 'added', lines: [{ op: 'add', text: 'four' }] },
    ]);
  });
});
