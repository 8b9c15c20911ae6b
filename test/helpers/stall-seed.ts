/**
 * Rows for the stall pass tests: a funnel /products/* → add_to_cart → /checkout
 * and, for each of `weeks` (oldest first, the last is "this week"), `perWeek`
 * high-intent sessions (score 90, members of the "Returning buyers" segment) and
 * `perWeek` ordinary ones (score 10, members of "Newsletter"). Step 2 is passed
 * by 60% of every group, except by high-intent sessions in the last week
 * (`stalledRate`); step 3 by half of those that passed step 2. Sessions that
 * pass step 3 convert with 50 of revenue.
 */
export interface StallSeed {
  tables: Record<string, { columns: string[]; rows: unknown[][] }>;
  segments: { buyers: string; newsletter: string };
}

export const FUNNEL_STEPS = [
  { kind: 'page', match: 'glob', pattern: '/products/*', key: 'product', label: 'Product page' },
  { kind: 'event', event_type: 'add_to_cart', key: 'add_to_cart', label: 'Add to cart' },
  { kind: 'page', match: 'exact', pattern: '/checkout', key: 'checkout', label: 'Checkout' },
] as const;

export function stallSeed(siteId: string, weekStarts: readonly number[], opts: { perWeek?: number; stalledRate?: number; tag?: string } = {}): StallSeed {
  const perWeek = opts.perWeek ?? 60;
  const stalledRate = opts.stalledRate ?? 0.2;
  const tag = opts.tag ?? 's';
  const segments = { buyers: `seg_${tag}_buyers`, newsletter: `seg_${tag}_news` };
  const t = {
    profiles: { columns: ['id', 'site_id', 'known', 'traits', 'created_at', 'updated_at'], rows: [] as unknown[][] },
    sessions: { columns: ['site_id', 'id', 'profile_id', 'visitor_id', 'first_seen', 'last_seen'], rows: [] as unknown[][] },
    events: { columns: ['site_id', 'session_id', 'profile_id', 'visitor_id', 'type', 'ts', 'body', 'received_at'], rows: [] as unknown[][] },
    scores: { columns: ['site_id', 'session_id', 'profile_id', 'visitor_id', 'score', 'body', 'received_at'], rows: [] as unknown[][] },
    segments: { columns: ['id', 'site_id', 'name', 'rule', 'priority', 'created_at', 'updated_at'], rows: [] as unknown[][] },
    segment_members: { columns: ['segment_id', 'profile_id', 'site_id', 'since'], rows: [] as unknown[][] },
    conversions: { columns: ['id', 'site_id', 'session_id', 'profile_id', 'revenue', 'currency', 'line_items', 'created_at'], rows: [] as unknown[][] },
  };
  const created = weekStarts[0]! - 86_400_000;
  t.segments.rows.push([segments.buyers, siteId, 'Returning buyers', JSON.stringify({ trait: 'plan', op: 'eq', value: 'never-matches-buyers' }), 1, created, created]);
  t.segments.rows.push([segments.newsletter, siteId, 'Newsletter', JSON.stringify({ trait: 'plan', op: 'eq', value: 'never-matches-news' }), 0, created, created]);
  weekStarts.forEach((start, w) => {
    const last = w === weekStarts.length - 1;
    for (const group of ['hi', 'lo'] as const) {
      const rate2 = group === 'hi' && last ? stalledRate : 0.6;
      const pass2 = Math.round(rate2 * perWeek);
      for (let i = 0; i < perWeek; i++) {
        const id = `${tag}_${w}_${group}_${i}`;
        const profile = `prf_${id}`;
        const session = `ses_${id}`;
        const visitor = `vis_${id}`;
        // Spread over the week (not the first or last hour, so a time zone slip would show).
        const t0 = start + 3_600_000 + Math.floor((i / perWeek) * 5 * 86_400_000);
        t.profiles.rows.push([profile, siteId, 0, '{}', t0, t0]);
        t.sessions.rows.push([siteId, session, profile, visitor, t0, t0 + 600_000]);
        const ev = (type: string, dt: number, extra: Record<string, unknown> = {}) =>
          t.events.rows.push([siteId, session, profile, visitor, type, t0 + dt, JSON.stringify({ site_id: siteId, session_id: session, type, ...extra }), t0 + dt]);
        ev('pageview', 1_000, { url: `https://shop.example/products/item-${i}?ref=x` });
        // Noise that must not count: the checkout page before adding to cart, and a glob miss.
        if (i % 7 === 0) ev('pageview', 2_000, { url: '/checkout' });
        if (i % 5 === 0) ev('pageview', 2_500, { url: '/products/a/b' });
        const passes2 = i < pass2;
        if (passes2) ev('add_to_cart', 60_000, { sku: `SKU-${i}` });
        const passes3 = passes2 && i % 2 === 0;
        if (passes3) {
          ev('pageview', 120_000, { url: 'https://shop.example/checkout#top' });
          t.conversions.rows.push([`cnv_${id}`, siteId, session, profile, 50, 'USD', '[]', t0 + 180_000]);
        }
        t.scores.rows.push([siteId, session, profile, visitor, group === 'hi' ? 90 : 10, '{}', t0 + 500]);
        t.segment_members.rows.push([group === 'hi' ? segments.buyers : segments.newsletter, profile, siteId, t0]);
      }
    }
  });
  return { tables: t, segments };
}

/** Multi-row INSERT statements (at most `chunk` rows each) for a seed. */
export function seedStatements(seed: StallSeed, chunk = 400): { sql: string; params: unknown[] }[] {
  const out: { sql: string; params: unknown[] }[] = [];
  for (const [table, { columns, rows }] of Object.entries(seed.tables)) {
    for (let i = 0; i < rows.length; i += chunk) {
      const part = rows.slice(i, i + chunk);
      const tuple = `(${columns.map(() => '?').join(', ')})`;
      out.push({ sql: `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${part.map(() => tuple).join(', ')}`, params: part.flat() });
    }
  }
  return out;
}
