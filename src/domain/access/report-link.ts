import { randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { McpTokenRow } from '../../store/tokens.js';
import { iso } from '../time.js';

/** Prefix of a report link's token: `rpl1.<payload>.<signature>`, base64url parts. */
export const REPORT_LINK_PREFIX = 'rpl1';
/** The purpose the signing key is derived for (see SecretBox.mac). */
export const REPORT_LINK_PURPOSE = 'report-link-v1';
/** Lifetime bounds of a report link, in minutes: short-lived by design. */
export const REPORT_LINK_MAX_MINUTES = 24 * 60;
export const REPORT_LINK_DEFAULT_MINUTES = 60;

/** What a report link grants: one read-only tool of one site with fixed arguments, until it expires. */
const payloadSchema = z.strictObject({
  /** Random id: names the link in the audit and makes two links of the same report differ. */
  i: z.string().min(8).max(64),
  s: z.string().min(1).max(128),
  /** The MCP token that minted it: the link works only while that token does. */
  t: z.string().min(1).max(128),
  n: z.string().min(1).max(100),
  a: z.record(z.string(), z.unknown()),
  e: z.number().int().positive(),
});

export interface ReportLink {
  id: string;
  siteId: string;
  minterTokenId: string;
  tool: string;
  args: Record<string, unknown>;
  expiresAt: number;
}

export type Signer = (data: string) => Buffer;

/** The signed token of a link (goes into `?link=`; whoever holds it can read the report until it expires). */
export function signReportLink(link: Omit<ReportLink, 'id'>, sign: Signer): { id: string; token: string } {
  const id = randomBytes(12).toString('base64url');
  const payload = { i: id, s: link.siteId, t: link.minterTokenId, n: link.tool, a: link.args, e: link.expiresAt };
  const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  const signed = `${REPORT_LINK_PREFIX}.${body}`;
  return { id, token: `${signed}.${sign(signed).toString('base64url')}` };
}

export type LinkCheck = { ok: true; link: ReportLink } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

/**
 * Reads and checks a link token: its form, its signature (compared in constant
 * time, before the payload is trusted) and its expiry at `now`.
 */
export function verifyReportLink(token: string, sign: Signer, now: number): LinkCheck {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== REPORT_LINK_PREFIX || !/^[A-Za-z0-9_-]+$/.test(parts[1]!) || !/^[A-Za-z0-9_-]+$/.test(parts[2]!)) {
    return { ok: false, reason: 'malformed' };
  }
  const expected = sign(`${parts[0]}.${parts[1]}`);
  const given = Buffer.from(parts[2]!, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad_signature' };
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const p = payloadSchema.safeParse(raw);
  if (!p.success) return { ok: false, reason: 'malformed' };
  if (p.data.e <= now) return { ok: false, reason: 'expired' };
  return { ok: true, link: { id: p.data.i, siteId: p.data.s, minterTokenId: p.data.t, tool: p.data.n, args: p.data.a, expiresAt: p.data.e } };
}

export type OpenedLink = { ok: true; link: ReportLink; minter: McpTokenRow } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' | 'minter' };

/**
 * Opens a link token at `now`: checks it against the server's key (form,
 * signature, expiry: verifyReportLink), then that the token that minted it is
 * still live (not revoked, not expired) and of the link's site.
 */
export async function openReportLink(store: Pick<Store, 'secrets' | 'tokens'>, token: string, now: number): Promise<OpenedLink> {
  const check = verifyReportLink(token, (data) => store.secrets.mac(REPORT_LINK_PURPOSE, data), now);
  if (!check.ok) return check;
  const row = await store.tokens.byId(check.link.minterTokenId);
  if (!row || row.site_id !== check.link.siteId || row.revoked_at !== null || (row.expires_at !== null && row.expires_at <= now)) return { ok: false, reason: 'minter' };
  return { ok: true, link: check.link, minter: row };
}

/** Arguments of a report, as JSON, at most this long (they travel inside the link). */
const MAX_ARGS_CHARS = 2000;

/** A freshly minted report link; the token is shown only this once. */
export const reportLinkViewSchema = z.object({
  id: z.string().describe('The link id (the report shows it).'),
  link: z.string().describe('The signed link token; shown only this once.'),
  path: z.string().describe('Append to the server address; whoever holds the URL can read the report until it expires.'),
  tool: z.string(),
  expires_at: z.string(),
});
export type ReportLinkView = z.input<typeof reportLinkViewSchema>;

/**
 * Signs a link to the report of `tool` (a read tool the caller has checked,
 * with arguments already checked against its input) with the server's key,
 * valid for `minutes`. Nothing is stored.
 */
export function mintReportLink(
  store: Pick<Store, 'secrets'>,
  link: { siteId: string; minterTokenId: string; tool: string; args: Record<string, unknown>; minutes: number },
): ReportLinkView {
  if (JSON.stringify(link.args).length > MAX_ARGS_CHARS) {
    throw new AppError('validation_failed', `arguments: at most ${MAX_ARGS_CHARS} characters of JSON`, { field: 'arguments' });
  }
  const expiresAt = Date.now() + link.minutes * 60_000;
  const { id, token } = signReportLink(
    { siteId: link.siteId, minterTokenId: link.minterTokenId, tool: link.tool, args: link.args, expiresAt },
    (data) => store.secrets.mac(REPORT_LINK_PURPOSE, data),
  );
  return { id, link: token, path: `/api/mcp/report?link=${token}`, tool: link.tool, expires_at: iso(expiresAt)! };
}
