import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';

/** Resolves a host name to all of its addresses (the shape of `dns.lookup(name, { all: true })`). */
export type LookupFn = (hostname: string) => Promise<ReadonlyArray<{ address: string; family: number }>>;

/** Options of every guard function. `allowPrivate` is for local development and tests only. */
export interface GuardOptions {
  allowPrivate: boolean;
  lookup?: LookupFn;
}

/** Outcome of checking a destination URL. */
export type DestinationCheck = { ok: true; url: URL; addresses: string[] } | { ok: false; reason: string };

/** Error code of a refused destination, at check time and at connect time alike. */
export const DESTINATION_REFUSED = 'EDESTINATIONREFUSED';

/** A destination that is not publicly routable (or not an http(s) URL without credentials). */
export class DestinationRefusedError extends Error {
  readonly code = DESTINATION_REFUSED;
  constructor(message: string) {
    super(message);
    this.name = 'DestinationRefusedError';
  }
}

const systemLookup: LookupFn = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });
const globalUnicast = ipaddr.IPv6.parse('2000::');

/**
 * Whether `ip` is a publicly routable unicast address. IPv4-mapped IPv6 is
 * judged as the IPv4 address it carries; every special range ipaddr.js knows
 * (loopback, private, link-local, CGNAT, multicast, unspecified, broadcast,
 * reserved, unique-local, NAT64, 6to4, Teredo, benchmarking, ORCHID, ...) is
 * refused, and IPv6 must lie in global unicast 2000::/3. Zone ids are refused.
 */
export function isPublicAddress(ip: string): boolean {
  if (isIP(ip) === 0 || ip.includes('%')) return false;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(ip);
  } catch {
    return false;
  }
  if (addr.range() !== 'unicast') return false;
  return addr.kind() === 'ipv4' || (addr as ipaddr.IPv6).match(globalUnicast, 3);
}

function refusedAddresses(hostname: string, addresses: readonly string[]): string | undefined {
  const bad = addresses.filter((a) => !isPublicAddress(a));
  if (bad.length === 0) return undefined;
  return `${hostname} resolves to ${bad.join(', ')}, which ${bad.length === 1 ? 'is' : 'are'} not publicly routable`;
}

/**
 * Checks a webhook destination: http or https only, no credentials in the URL,
 * and the host must be a publicly routable IP literal or a name that resolves
 * exclusively to publicly routable addresses. WHATWG URL parsing has already
 * turned decimal, octal, hex and short IPv4 spellings (2130706433, 0177.0.0.1,
 * 127.1) into dotted quads, so they are judged as the address they denote.
 */
export async function checkDestinationUrl(url: string, opts: GuardOptions): Promise<DestinationCheck> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'not a valid absolute URL' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return { ok: false, reason: `scheme ${parsed.protocol} is not allowed; use http or https` };
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return { ok: false, reason: 'credentials in the URL are not allowed' };
  }
  if (parsed.port === '0') return { ok: false, reason: 'port 0 cannot be connected to' };
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (isIP(host) !== 0) {
    if (!opts.allowPrivate && !isPublicAddress(host)) {
      return { ok: false, reason: `${host} is not a publicly routable address` };
    }
    return { ok: true, url: parsed, addresses: [host] };
  }
  const name = host.replace(/\.$/, '').toLowerCase();
  if (!opts.allowPrivate && (name === 'localhost' || name.endsWith('.localhost'))) {
    return { ok: false, reason: `${host} is a loopback name` };
  }
  let addresses: string[];
  try {
    addresses = (await (opts.lookup ?? systemLookup)(host)).map((a) => a.address);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return { ok: false, reason: `cannot resolve ${host}${typeof code === 'string' ? ` (${code})` : ''}` };
  }
  if (addresses.length === 0) return { ok: false, reason: `${host} has no addresses` };
  const refused = opts.allowPrivate ? undefined : refusedAddresses(host, addresses);
  if (refused !== undefined) return { ok: false, reason: refused };
  return { ok: true, url: parsed, addresses };
}

/**
 * Pre-send check: like checkDestinationUrl, but throws DestinationRefusedError.
 * Call it before every delivery. It is one of two layers: the dispatcher of
 * createGuardedDispatcher checks again at connect time, on the addresses the
 * socket actually connects to, so a DNS answer that changes between this check
 * and the connection cannot reach a private address.
 */
export async function assertDestinationAllowed(url: string | URL, opts: GuardOptions): Promise<URL> {
  const check = await checkDestinationUrl(String(url), opts);
  if (!check.ok) throw new DestinationRefusedError(`destination refused: ${check.reason}`);
  return check.url;
}

function familyOf(family: number | string | undefined): 0 | 4 | 6 {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

/**
 * A `lookup` for `net.connect` / `tls.connect`: resolves the name, refuses the
 * connection with DestinationRefusedError (code EDESTINATIONREFUSED) when any
 * address is not publicly routable (unless allowPrivate), and hands the socket
 * exactly the addresses it checked.
 */
export function guardedLookup(opts: GuardOptions): LookupFunction {
  const resolve = opts.lookup ?? systemLookup;
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (all) => {
        const refused = opts.allowPrivate ? undefined : refusedAddresses(hostname, all.map((a) => a.address));
        if (refused !== undefined) {
          callback(new DestinationRefusedError(`destination refused: ${refused}`), '');
          return;
        }
        const family = familyOf(options.family);
        const usable = all.filter((a) => family === 0 || a.family === family);
        const first = usable[0];
        if (first === undefined) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          err.code = 'ENOTFOUND';
          callback(err, '');
          return;
        }
        if (options.all) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
        else callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/**
 * The undici dispatcher for webhook deliveries. Names are resolved through
 * guardedLookup, so the socket connects to the address that was checked at
 * connect time; IP-literal hosts (which net.connect never looks up) are checked
 * by the connector itself. Connect timeout 5 s; redirects are never followed
 * (undici.request does not follow them, and no redirect interceptor is added).
 */
export function createGuardedDispatcher(opts: GuardOptions & { connections?: number }): Agent {
  const connect = buildConnector({ lookup: guardedLookup(opts), timeout: 5000 });
  return new Agent({
    connections: opts.connections ?? null,
    connect: (options, callback) => {
      const host = options.hostname.startsWith('[') ? options.hostname.slice(1, -1) : options.hostname;
      if (!opts.allowPrivate && isIP(host) !== 0 && !isPublicAddress(host)) {
        callback(new DestinationRefusedError(`destination refused: ${host} is not a publicly routable address`), null);
        return;
      }
      connect(options, callback);
    },
  });
}
