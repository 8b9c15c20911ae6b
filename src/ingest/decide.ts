import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import { sendFailure, sendJsonText } from '../http/respond.js';
import { zonesAnswer } from '../domain/decide/decide.js';
import { nulError, validationError } from '../errors/validation.js';
import { takePublicLimit, type RateLimiter } from '../http/rate-limit.js';
import type { IngestionService } from '../domain/ingestion/service.js';
import type { DecisionService } from '../domain/web/decisions.js';
import { clientAddress, visitorCookie, type OriginPolicy } from './origins.js';

export const DECIDE_PATH = '/api/decide';

export interface DecideDeps {
  decisions: DecisionService;
  /** Validates the site (unknown_site, as ingestion does). */
  ingestion: IngestionService;
  /** Per client address; null when rate limiting is off. */
  ipLimiter: RateLimiter | null;
  /** Per site; null when rate limiting is off. */
  siteLimiter: RateLimiter | null;
  trustProxy: boolean;
  /** The CORS check of browser requests (Origin must be one of the site's). */
  origins: OriginPolicy;
  /** Logs an unexpected failure of `req` (with its request id). */
  onUnexpected: (err: unknown, req: IncomingMessage) => void;
}

/** The query of GET /api/decide; other parameters (cache busters) are ignored. */
export const decideQuerySchema = z
  .object({
    site_id: z.string().min(1).max(64).describe('Public site identifier.'),
    visitor_id: z.string().min(1).max(128).describe('Persistent visitor ID (the persistent visitor cookie).'),
    url: z.string().min(1).max(2048).describe('The page URL (absolute http(s), or a path starting with "/").'),
  })
  .meta({ id: 'DecideQuery' });

/**
 * GET /api/decide?site_id=&visitor_id=&url= for the browser tag: public like
 * ingestion (the site id is public), rate-limited per client address and per
 * site, answered from the site's cached snapshot. Records one exposure per zone
 * decided in one write; the response lists every zone with what it shows and why.
 * Answered under the site's own origin (reverse-proxied), it sets the visitor
 * cookie itself, so Safari keeps it longer than a script cookie.
 */
export async function handleDecide(deps: DecideDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Cache-Control', 'no-store');
  req.resume();
  try {
    if (req.method === 'OPTIONS') return await deps.origins.preflight(req, res, 'GET, OPTIONS');
    if (req.method !== 'GET') {
      throw new AppError('method_not_allowed', `${req.method} is not allowed on ${DECIDE_PATH}; use GET`, {}, { Allow: 'GET, OPTIONS' });
    }
    await takePublicLimit(deps.ipLimiter, 'client_address', clientAddress(req, deps.trustProxy));
    const params = queryOf(req.url ?? '/');
    const raw: Record<string, string> = {};
    for (const key of ['site_id', 'visitor_id', 'url'] as const) {
      const all = params.getAll(key);
      if (all.length > 1) throw new AppError('validation_failed', `${key}: given ${all.length} times; give it once`, { field: key });
      if (all.length === 1) raw[key] = all[0]!;
    }
    const nul = nulError(raw);
    if (nul) throw nul;
    const parsed = decideQuerySchema.safeParse(raw);
    if (!parsed.success) throw validationError(parsed.error);
    const q = parsed.data;
    const site = await deps.ingestion.site(q.site_id);
    deps.origins.check(site, req, res);
    await takePublicLimit(deps.siteLimiter, 'site', q.site_id);
    const r = await deps.decisions.decideAndRecord(q.site_id, q.visitor_id, q.url);
    if (!r) throw new AppError('validation_failed', 'url: an absolute http(s) URL or a path starting with "/"', { field: 'url' });
    const cookie = visitorCookie(site, req, deps.trustProxy, q.visitor_id);
    if (cookie) res.setHeader('Set-Cookie', cookie);
    // The same bytes as sendJson of { site_id, visitor_id, holdout, zones }, the zones' texts (and their UTF-8
    // lengths) kept per snapshot.
    const head = `{"site_id":${JSON.stringify(q.site_id)},"visitor_id":${JSON.stringify(q.visitor_id)},"holdout":${r.decision.holdout},"zones":`;
    const zones = zonesAnswer(r.snap, r.decision.zones);
    sendJsonText(res, 200, `${head}${zones.text}}`, undefined, Buffer.byteLength(head) + zones.bytes + 1);
  } catch (err) {
    sendFailure(res, err, () => deps.onUnexpected(err, req), 'internal error; nothing was stored');
  }
}

/** The query parameters of a request target (what `new URL(target, base).searchParams` gives, without parsing the rest of the URL). */
function queryOf(target: string): URLSearchParams {
  const q = target.indexOf('?');
  if (q === -1) return new URLSearchParams();
  const hash = target.indexOf('#', q);
  return new URLSearchParams(hash === -1 ? target.slice(q + 1) : target.slice(q + 1, hash));
}
