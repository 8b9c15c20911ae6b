import type { IncomingMessage, ServerResponse } from 'node:http';
import { getDomain } from 'tldts';
import type { Store } from '../store/store.js';
import type { SiteRow } from '../store/sites.js';
import { AppError } from '../errors/app-error.js';
import { originAllowed, PerSiteAnswers } from '../domain/sites/origins.js';

/**
 * The HTTP side of the origin rules of domain/sites/origins.ts: CORS answers,
 * preflights and the visitor cookie of the public paths.
 */

/** The request's own host as the browser addressed it (X-Forwarded-Host behind a trusted proxy). */
export function requestHost(req: IncomingMessage, trustProxy: boolean): string | undefined {
  const fwd = trustProxy ? req.headers['x-forwarded-host'] : undefined;
  const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',')[0]?.trim();
  return (first || req.headers.host)?.toLowerCase();
}

const LIST_TTL_MS = 5_000;

/** The client address a public limit counts against: the first X-Forwarded-For hop behind a trusted proxy, else the socket's peer. */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const fwd = req.headers['x-forwarded-for'];
    const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/** The check of the public paths, with the site list cached briefly for preflights (which name no site). */
export class OriginPolicy {
  private sites: { rows: SiteRow[]; at: number } | null = null;

  constructor(
    private readonly store: Store,
    private readonly trustProxy: boolean,
  ) {}

  /** The request's Origin, or undefined for requests that carry none (servers). */
  origin(req: IncomingMessage): string | undefined {
    const o = req.headers.origin;
    return typeof o === 'string' && o !== '' ? o : undefined;
  }

  /** Throws forbidden_origin unless the request carries no Origin or one of the site's; sets the CORS answer. */
  check(site: SiteRow, req: IncomingMessage, res: ServerResponse): void {
    const origin = this.origin(req);
    if (origin === undefined) return;
    if (!originAllowed(site, origin, requestHost(req, this.trustProxy))) {
      res.removeHeader('Access-Control-Allow-Origin');
      throw new AppError(
        'forbidden_origin',
        `Origin ${JSON.stringify(origin)} is not one of the site's origins; nothing was stored. Add it to the site (svc site update ${site.id} --allowed-origins ${JSON.stringify(origin)}) or set its domain`,
        { origin, site_id: site.id },
      );
    }
    allow(res, origin);
  }

  /**
   * A preflight (OPTIONS): 204 allowing the origin when some site allows it (the request
   * that follows is checked against its own site), else 403 forbidden_origin.
   */
  async preflight(req: IncomingMessage, res: ServerResponse, methods: string): Promise<void> {
    const origin = this.origin(req);
    const headers: Record<string, string> = {
      'Access-Control-Allow-Methods': methods,
      'Access-Control-Allow-Headers': 'Content-Type, Idempotency-Key',
      'Access-Control-Max-Age': '86400',
    };
    if (origin === undefined) {
      res.writeHead(204, { ...headers, 'Access-Control-Allow-Origin': '*' });
      res.end();
      return;
    }
    if (!(await this.anySite(req, origin))) {
      res.removeHeader('Access-Control-Allow-Origin');
      throw new AppError('forbidden_origin', `Origin ${JSON.stringify(origin)} is not an origin of any site`, { origin });
    }
    allow(res, origin);
    res.writeHead(204, headers);
    res.end();
  }

  /** Whether any site allows the origin (for paths that name no site, such as /tag.js). */
  async anySite(req: IncomingMessage, origin: string): Promise<boolean> {
    const now = Date.now();
    if (!this.sites || now - this.sites.at > LIST_TTL_MS) this.sites = { rows: await this.store.sites.list(), at: now };
    const host = requestHost(req, this.trustProxy);
    return this.sites.rows.some((s) => originAllowed(s, origin, host));
  }
}

function allow(res: ServerResponse, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Vary', 'Origin');
}

/** Cookie lifetime of the visitor id svc sets itself: 400 days, the longest browsers keep. */
const VISITOR_COOKIE_MAX_AGE = 400 * 86_400;
const SAFE_COOKIE_VALUE = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The Set-Cookie of the persistent visitor id when svc answers under the site's own origin
 * (reverse-proxied: the page's Origin is the request's own host, within the site's domain):
 * a first-party server cookie, which Safari does not cap at 7 days as it caps script cookies.
 * Null otherwise, or when the site honours privacy signals and the request carries one.
 */
export function visitorCookie(site: SiteRow, req: IncomingMessage, trustProxy: boolean, visitorId: string): string | null {
  const origin = req.headers.origin;
  const host = requestHost(req, trustProxy);
  if (!origin || !host || !site.domain || !SAFE_COOKIE_VALUE.test(visitorId)) return null;
  if (site.honour_privacy_signals && (req.headers['sec-gpc'] === '1' || req.headers.dnt === '1')) return null;
  const attributes = cookieAttributes.get(site, origin, host, () => visitorCookieAttributes(site.domain!, origin, host));
  return attributes === null ? null : `svc_vid=${visitorId}${attributes}`;
}

/** The visitor cookie's attributes per site row, origin and host (two URL parses and two registrable-domain look-ups each). */
const cookieAttributes = new PerSiteAnswers<string | null>();

/** The attributes of the visitor cookie for a page of `origin` calling svc at `host`, or null when svc sets none there. */
function visitorCookieAttributes(domain: string, origin: string, host: string): string | null {
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return null;
  }
  if (u.host !== host) return null;
  const registrable = getDomain(u.hostname);
  if (!registrable || registrable !== getDomain(domain)) return null;
  const secure = u.protocol === 'https:' ? '; Secure' : '';
  return `; Domain=${registrable}; Path=/; Max-Age=${VISITOR_COOKIE_MAX_AGE}; SameSite=Lax${secure}`;
}
