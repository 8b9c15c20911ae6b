import { domainToASCII } from 'node:url';
import { parse } from 'tldts';
import { isFreeMailDomain } from './free-mail.js';

/** What an input to the company-domain resolver was read as. */
export type InputKind = 'email' | 'url' | 'host';

export type Resolution =
  | { ok: true; domain: string; host: string; kind: InputKind }
  | { ok: false; reason: 'free_mail'; domain: string; host: string; kind: InputKind; message: string }
  | { ok: false; reason: 'invalid'; kind: InputKind | null; message: string };

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

function invalid(kind: InputKind | null, message: string): Resolution {
  return { ok: false, reason: 'invalid', kind, message };
}

/** The host named by a URL, an email address or a bare host name (with or without a path or port). */
function hostOf(raw: string): { kind: InputKind; host: string } | null {
  if (SCHEME.test(raw)) {
    try {
      return { kind: 'url', host: new URL(raw).hostname };
    } catch {
      return null;
    }
  }
  const at = raw.lastIndexOf('@');
  if (at !== -1) return { kind: 'email', host: raw.slice(at + 1) };
  const host = raw.split(/[/?#]/, 1)[0]!.replace(/:\d+$/, '');
  return { kind: 'host', host };
}

/**
 * The company key of a website URL, an email address or a host: its
 * registrable domain (Public Suffix List, private suffixes included, so
 * `acme.myshopify.com` stays one shop), in ASCII (IDN names in their `xn--`
 * form), lower case, without the trailing dot. Free-mail providers are never a
 * company key: both the full host and its registrable domain are checked.
 *
 * @example resolveCompanyDomain('jane@mail.example.com') // { ok: true, domain: 'example.com', ... }
 */
export function resolveCompanyDomain(input: string): Resolution {
  const raw = input.trim();
  if (raw === '') return invalid(null, 'empty input: give a website URL, an email address or a domain');
  if (/\s/.test(raw)) return invalid(null, 'a website, email address or domain has no spaces');
  const parsed = hostOf(raw);
  if (!parsed) return invalid('url', 'not a valid URL');
  const { kind } = parsed;
  let host = parsed.host.toLowerCase().replace(/\.+$/, '');
  if (host.startsWith('[') || /^[\d.]+$/.test(host) || host.includes(':')) return invalid(kind, 'an IP address is not a company domain');
  host = domainToASCII(host);
  if (host === '') return invalid(kind, 'not a valid domain name');
  const psl = parse(host, { allowPrivateDomains: true });
  const domain = psl.isIcann || psl.isPrivate ? psl.domain : null;
  if (!domain) return invalid(kind, `${host} has no registrable domain (a public suffix or an unknown top-level domain)`);
  if (isFreeMailDomain(host) || isFreeMailDomain(domain)) {
    return { ok: false, reason: 'free_mail', domain, host, kind, message: `${domain} is a free-mail provider, never a company key` };
  }
  return { ok: true, domain, host, kind };
}

/** The company domain of a normalized email address, or null for free mail and malformed addresses. */
export function companyDomainOfEmail(email: string): string | null {
  if (!email.includes('@')) return null;
  const r = resolveCompanyDomain(email);
  return r.ok ? r.domain : null;
}
