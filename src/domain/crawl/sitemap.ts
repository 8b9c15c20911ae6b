import { Readable } from 'node:stream';
import { ErrorLevel, XMLToSitemapIndexStream, XMLToSitemapItemStream } from 'sitemap';

/** Protocol limits of one sitemap file (sitemaps.org): 50,000 URLs, 50 MB uncompressed. */
export const SITEMAP_MAX_URLS = 50_000;
export const SITEMAP_MAX_BYTES = 50 * 1024 * 1024;

export type ParsedSitemap =
  | { kind: 'index'; sitemaps: { url: string; lastmod: string | null }[] }
  | { kind: 'urlset'; urls: { url: string; lastmod: string | null }[] };

/** The local name of the first element of an XML document, or null. */
export function rootElement(xml: string): string | null {
  const head = xml.slice(0, 65_536).replace(/<!--[\s\S]*?-->/g, '').replace(/<\?[\s\S]*?\?>/g, '').replace(/<!DOCTYPE[^>]*>/gi, '');
  const m = /<([A-Za-z_][\w.:-]*)/.exec(head);
  if (!m) return null;
  const name = m[1]!;
  return name.slice(name.indexOf(':') + 1);
}

function httpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Parses a sitemap or sitemap index with the `sitemap` package's XML stream
 * parsers (chosen by the root element: `sitemapindex` or `urlset`). Keeps at
 * most SITEMAP_MAX_URLS entries with absolute http(s) URLs; anything else is
 * not a sitemap and throws.
 */
export async function parseSitemapXml(xml: string): Promise<ParsedSitemap> {
  const root = rootElement(xml);
  if (root !== 'sitemapindex' && root !== 'urlset') throw new Error(`not a sitemap: the root element is ${root === null ? 'missing' : `<${root}>`}`);
  const parser = root === 'sitemapindex' ? new XMLToSitemapIndexStream({ level: ErrorLevel.SILENT, logger: false }) : new XMLToSitemapItemStream({ level: ErrorLevel.SILENT, logger: false });
  const entries: { url: string; lastmod: string | null }[] = [];
  const source = Readable.from([xml]);
  source.on('error', (err) => parser.destroy(err));
  source.pipe(parser);
  for await (const item of parser as AsyncIterable<{ url: string; lastmod?: string }>) {
    if (!httpUrl(item.url)) continue;
    entries.push({ url: new URL(item.url).toString(), lastmod: item.lastmod ?? null });
    if (entries.length >= SITEMAP_MAX_URLS) {
      source.destroy();
      parser.destroy();
      break;
    }
  }
  return root === 'sitemapindex' ? { kind: 'index', sitemaps: entries } : { kind: 'urlset', urls: entries };
}
