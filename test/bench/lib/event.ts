/**
 * The request bodies of the ingestion benchmark: a pageview as a browser
 * snippet sends it (url with UTM tags, referrer, title, viewport, custom
 * props), one per session of a fixed pool. Ids have fixed widths so every body
 * has the same byte size.
 */
export const PAGES = [
  ['/products/trail-runner-2', 'Trail Runner 2 | Example Shop'],
  ['/products/rain-jacket-xl', 'Rain Jacket XL | Example Shop'],
  ['/collections/new-in-fall', 'New In: Fall   | Example Shop'],
  ['/blog/how-to-layer-right', 'How to layer   | Example Shop'],
] as const;
export const REFERRERS = ['https://www.google.com/', 'https://www.bing.com/?q', 'https://t.co/a1b2c3d4e5', 'https://duckduckgo.com/'] as const;
export const VIEWPORTS = [
  [1440, 900],
  [1536, 864],
  [1366, 768],
  [1280, 720],
] as const;

export interface EventBodies {
  bodies: Buffer[];
  /** Byte size of every body (they are all the same size). */
  bytes: number;
  sessions: number;
}

export function buildEventBodies(siteId: string, sessions: number): EventBodies {
  const bodies: Buffer[] = [];
  for (let i = 0; i < sessions; i++) {
    const n = String(i).padStart(6, '0');
    const [path, title] = PAGES[i % PAGES.length]!;
    const [w, h] = VIEWPORTS[(i >> 2) % VIEWPORTS.length]!;
    const event = {
      site_id: siteId,
      session_id: `sess_${n}`,
      visitor_id: `vis_${n}`,
      type: 'pageview',
      url: `https://shop.example.com${path}?utm_source=newsletter`,
      referrer: REFERRERS[(i >> 4) % REFERRERS.length],
      title,
      viewport: { w, h },
      props: { ab: i % 2 ? 'B' : 'A' },
    };
    bodies.push(Buffer.from(JSON.stringify(event)));
  }
  const sizes = new Set(bodies.map((b) => b.length));
  if (sizes.size !== 1) throw new Error(`event bodies differ in size: ${[...sizes].join(', ')}`);
  return { bodies, bytes: bodies[0]?.length ?? 0, sessions };
}
