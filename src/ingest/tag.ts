import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../errors/app-error.js';
import { nulError } from '../errors/validation.js';
import { jsonList } from '../domain/sites/origins.js';
import { clientAddress, type OriginPolicy } from './origins.js';
import { takePublicLimit, type RateLimiter } from '../http/rate-limit.js';
import { sendFailure, sendJson } from '../http/respond.js';
import type { IngestionService } from '../domain/ingestion/service.js';

export const TAG_PATH = '/tag.js';
export const TAG_CONFIG_PATH = '/api/tag/config';
const VERSIONED = /^\/tag\/([0-9a-f]{16})\.js$/;

/** The built browser tag (dist/tag/tag.js) with what its URLs and Subresource Integrity need. */
export interface TagAsset {
  body: Buffer;
  /** First 16 hex digits of its SHA-256: the versioned URL /tag/<hash>.js. */
  hash: string;
  /** sha384-… for the integrity attribute of the versioned URL. */
  integrity: string;
  versionedPath: string;
}

/** Reads the built tag (dist/tag/tag.js from dist/ingest/ and from the CLI bundle's dist/bundle/); null when the build has not made it (npm run build). */
export function loadTag(file: URL = new URL('../tag/tag.js', import.meta.url)): TagAsset | null {
  let body: Buffer;
  try {
    body = readFileSync(file);
  } catch {
    return null;
  }
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  const integrity = `sha384-${createHash('sha384').update(body).digest('base64')}`;
  return { body, hash, integrity, versionedPath: `/tag/${hash}.js` };
}

export interface TagDeps {
  asset: TagAsset | null;
  origins: OriginPolicy;
  ingestion: IngestionService;
  /** GET /api/tag/config per client address (each asks the store for a site); null when rate limiting is off. */
  configLimiter: RateLimiter | null;
  trustProxy: boolean;
  onUnexpected: (err: unknown, req: IncomingMessage) => void;
}

/** The paths this handler answers: the tag, its versioned URLs and its settings. */
export function isTagPath(pathname: string): boolean {
  return pathname === TAG_PATH || pathname === TAG_CONFIG_PATH || VERSIONED.test(pathname);
}

/**
 * GET /tag.js (revalidated every 5 minutes, ETag), GET /tag/<hash>.js (immutable; only the
 * current build's hash), and GET /api/tag/config?site_id= (what the tag needs before it may
 * write a cookie or send anything: consent and privacy-signal settings, kept URL parameters,
 * the site's time zone). Browser requests from origins of no site (or not the named site's) get 403.
 */
export async function handleTag(deps: TagDeps, pathname: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  req.resume();
  res.setHeader('Access-Control-Allow-Origin', '*');
  try {
    if (req.method === 'OPTIONS') return await deps.origins.preflight(req, res, 'GET, HEAD, OPTIONS');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new AppError('method_not_allowed', `${req.method} is not allowed on ${pathname}; use GET`, {}, { Allow: 'GET, HEAD, OPTIONS' });
    }
    if (pathname === TAG_CONFIG_PATH) return await config(deps, req, res);
    const origin = deps.origins.origin(req);
    if (origin !== undefined) {
      if (!(await deps.origins.anySite(req, origin))) {
        res.removeHeader('Access-Control-Allow-Origin');
        throw new AppError('forbidden_origin', `Origin ${JSON.stringify(origin)} is not an origin of any site`, { origin });
      }
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
    }
    const asset = deps.asset;
    if (!asset) throw new AppError('not_found', 'the browser tag is not built in this installation (run npm run build)');
    const versioned = VERSIONED.exec(pathname);
    if (versioned && versioned[1] !== asset.hash) {
      throw new AppError('not_found', `no tag version ${versioned[1]}; the current one is ${asset.versionedPath}`, { current: asset.versionedPath });
    }
    const etag = `"${asset.hash}"`;
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', versioned ? 'public, max-age=31536000, immutable' : 'public, max-age=300');
    res.setHeader('X-SVC-Tag-Version', asset.versionedPath);
    res.setHeader('X-SVC-Tag-Integrity', asset.integrity);
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304);
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Content-Length': asset.body.length });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
  } catch (err) {
    sendFailure(res, err, () => deps.onUnexpected(err, req));
  }
}

async function config(deps: TagDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await takePublicLimit(deps.configLimiter, 'client_address', clientAddress(req, deps.trustProxy));
  const all = new URL(req.url ?? '/', 'http://svc.invalid').searchParams.getAll('site_id');
  if (all.length !== 1 || all[0] === '' || all[0]!.length > 64) {
    throw new AppError('validation_failed', 'site_id: give the public site id once', { field: 'site_id' });
  }
  const nul = nulError({ site_id: all[0] });
  if (nul) throw nul;
  const site = await deps.ingestion.site(all[0]!);
  deps.origins.check(site, req, res);
  res.setHeader('Cache-Control', 'public, max-age=60');
  sendJson(res, 200, {
    site_id: site.id,
    timezone: site.timezone,
    consent_required: site.consent_required === 1,
    honour_privacy_signals: site.honour_privacy_signals === 1,
    url_params: jsonList(site.url_params),
  });
}
