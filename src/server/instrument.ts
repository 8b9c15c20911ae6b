import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { beginRequest, requestIdFor } from '../http/request-context.js';
import { BODY_LIMITS } from '../ingest/limits.js';
import { DECIDE_PATH } from '../ingest/decide.js';
import { ROUTES as PULSE_ROUTES } from '../pulse/routes.js';
import type { Metrics } from '../metrics/metrics.js';

type Surface = 'ingest' | 'decide' | 'mcp' | 'pulse' | 'health' | 'other';

interface RouteLabel {
  surface: Surface;
  route: string;
}

const PULSE_BASE = '/api/pulse/v1';

/** Fixed paths, and the profile API's path templates as regular expressions (`{id}` matches one segment). */
const EXACT = new Map<string, RouteLabel>([
  ...Object.keys(BODY_LIMITS).map((p) => [p, { surface: 'ingest', route: p }] as const),
  [DECIDE_PATH, { surface: 'decide', route: DECIDE_PATH }],
  ['/healthz', { surface: 'health', route: '/healthz' }],
  ['/readyz', { surface: 'health', route: '/readyz' }],
  ['/api/mcp', { surface: 'mcp', route: '/api/mcp' }],
  ['/api/mcp/', { surface: 'mcp', route: '/api/mcp' }],
  ['/api/mcp/report', { surface: 'mcp', route: '/api/mcp/report' }],
  [`${PULSE_BASE}/openapi.json`, { surface: 'pulse', route: `${PULSE_BASE}/openapi.json` }],
  // The profile API's paths without a parameter (GET /profile among them): found here, not by a regular expression each.
  ...PULSE_ROUTES.filter((r) => !r.path.includes('{')).map((r) => [`${PULSE_BASE}${r.path}`, { surface: 'pulse', route: `${PULSE_BASE}${r.path}` }] as const),
]);
const TEMPLATES: { re: RegExp; label: RouteLabel }[] = [...new Set(PULSE_ROUTES.map((r) => r.path))].map((path) => ({
  re: new RegExp(`^${PULSE_BASE}${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`),
  label: { surface: 'pulse', route: `${PULSE_BASE}${path}` },
}));

/**
 * The route template of a path, for metric labels: a known path or template,
 * else `other` (a scanner's random URLs must not mint label values).
 */
export function routeLabel(pathname: string): RouteLabel {
  const exact = EXACT.get(pathname);
  if (exact) return exact;
  if (pathname.startsWith(`${PULSE_BASE}/`)) {
    for (const t of TEMPLATES) if (t.re.test(pathname)) return t.label;
    return { surface: 'pulse', route: 'other' };
  }
  if (pathname.startsWith('/api/mcp/')) return { surface: 'mcp', route: 'other' };
  return { surface: 'other', route: 'other' };
}

/** The scope a 429 of a surface applies to when the error does not name one. */
const DEFAULT_SCOPE: Record<Surface, string> = { ingest: 'client_address', decide: 'client_address', mcp: 'token', pulse: 'key', health: 'none', other: 'none' };

export interface InstrumentOptions {
  logger: Logger;
  trustProxy: boolean;
  metrics: Metrics | null;
  /** True once shutdown has begun: responses then ask keep-alive clients to reconnect (elsewhere). */
  draining: () => boolean;
}

/**
 * What every request gets before any surface sees it: an id (the trusted
 * proxy's X-Request-Id, else a new one) in the `X-Request-Id` response header,
 * a context whose logger stamps that id on every line about it, and, when it
 * ends, one debug line (method, route template, status, duration; never the
 * path or query, which may carry personal data) and its metrics.
 */
export function instrument(req: IncomingMessage, res: ServerResponse, pathname: string, opts: InstrumentOptions): void {
  const ctx = beginRequest(req, requestIdFor(req, opts.trustProxy), opts.logger);
  res.setHeader('X-Request-Id', ctx.id);
  if (opts.draining()) res.setHeader('Connection', 'close');
  const m = opts.metrics;
  const debug = opts.logger.isLevelEnabled('debug');
  // Nothing to report (no metrics, no debug line; the level is set once per process): no listener, no route
  // label, no clock read.
  if (m === null && !debug) return;
  res.once('close', () => {
    const seconds = (performance.now() - ctx.startedAt) / 1000;
    // Abandoned before the answer was written: nginx's 499 (client closed request).
    const status = res.writableFinished || res.headersSent ? res.statusCode : 499;
    const { surface, route } = routeLabel(pathname);
    if (m) {
      m.httpRequest({ surface, route, method: req.method ?? 'other', status, seconds });
      if (surface === 'ingest' && req.method === 'POST') m.ingestion(route, status < 400 ? null : (ctx.error?.code ?? `http_${status}`));
      if (ctx.error?.code === 'rate_limited' || (status === 429 && ctx.error === null)) m.rateLimit(surface, ctx.error?.scope ?? DEFAULT_SCOPE[surface]);
    }
    if (debug) {
      ctx.log.debug(
        { method: req.method, route, status, duration_ms: Math.round(seconds * 1000), error: ctx.error?.code },
        'request',
      );
    }
  });
}
