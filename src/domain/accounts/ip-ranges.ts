import ipaddr from 'ipaddr.js';
import { resolveCompanyDomain } from './domain.js';

/** One operator-supplied range: a network in CIDR form (normalized to its network address) and the company it belongs to. */
export interface IpRange {
  cidr: string;
  domain: string;
  name: string | null;
}

export interface CsvLineError {
  line: number;
  message: string;
}

/** The widest range accepted per family: a catch-all such as 0.0.0.0/0 would attribute every visitor to one company. */
export const MIN_PREFIX = { ipv4: 8, ipv6: 16 } as const;

/** Most ranges one load accepts. */
export const MAX_RANGES = 100_000;

/** Splits one CSV line: commas separate fields, double quotes enclose a field that holds commas ("" is a quote). */
export function splitCsvLine(line: string): string[] | null {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) return null;
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += line[i++];
      }
      if (i < line.length && line[i] !== ',') return null;
    } else {
      const end = line.indexOf(',', i);
      field = end === -1 ? line.slice(i) : line.slice(i, end);
      i = end === -1 ? line.length : end;
    }
    out.push(field.trim());
    if (i >= line.length) return out;
    i++;
  }
}

function bytesOf(addr: ipaddr.IPv4 | ipaddr.IPv6): number[] {
  return addr.toByteArray();
}

/** The bytes of an address with everything past `bits` cleared, as hex. */
function networkKey(bytes: readonly number[], bits: number): string {
  let hex = '';
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    const mask = keep === 0 ? 0 : (0xff << (8 - keep)) & 0xff;
    hex += ((bytes[i]! & mask) | 0x100).toString(16).slice(1);
  }
  return hex;
}

/** Parses a CIDR: IPv4 in four-part decimal or IPv6; host bits are cleared (10.1.2.3/8 is 10.0.0.0/8). */
export function parseCidr(text: string): { cidr: string; kind: 'ipv4' | 'ipv6'; bits: number; key: string } | null {
  const s = text.trim();
  const isV4 = ipaddr.IPv4.isValidCIDRFourPartDecimal(s);
  if (!isV4 && !ipaddr.IPv6.isValidCIDR(s)) return null;
  const [addr, bits] = ipaddr.parseCIDR(s);
  const bytes = bytesOf(addr);
  const key = networkKey(bytes, bits);
  const network = ipaddr.fromByteArray(key.match(/../g)!.map((h) => parseInt(h, 16)));
  const shown = network.kind() === 'ipv6' ? (network as ipaddr.IPv6).toRFC5952String() : network.toString();
  return { cidr: `${shown}/${bits}`, kind: addr.kind(), bits, key };
}

/**
 * Parses the operator's CSV: `cidr,domain[,name]` per line; an optional header
 * line starting with `cidr`, blank lines and `#` comments are skipped. The
 * domain goes through the company-domain resolver (a website or host is
 * accepted; free mail is refused). Ranges wider than MIN_PREFIX and repeated
 * ranges are refused. Every bad line is reported; a file with
 * any error yields no ranges.
 */
export function parseRangesCsv(text: string): { ranges: IpRange[]; errors: CsvLineError[] } {
  const ranges: IpRange[] = [];
  const errors: CsvLineError[] = [];
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = splitCsvLine(line);
    if (fields === null) {
      errors.push({ line: n + 1, message: 'unbalanced double quotes' });
      continue;
    }
    if (ranges.length === 0 && errors.length === 0 && fields[0]!.toLowerCase() === 'cidr') continue;
    if (fields.length < 2 || fields.length > 3) {
      errors.push({ line: n + 1, message: `expected cidr,domain[,name]; got ${fields.length} field(s)` });
      continue;
    }
    const cidr = parseCidr(fields[0]!);
    if (!cidr) {
      errors.push({ line: n + 1, message: `not a CIDR range: ${fields[0]!.slice(0, 60)}` });
      continue;
    }
    if (cidr.bits < (cidr.kind === 'ipv4' ? MIN_PREFIX.ipv4 : MIN_PREFIX.ipv6)) {
      errors.push({ line: n + 1, message: `${cidr.cidr} is wider than /${cidr.kind === 'ipv4' ? MIN_PREFIX.ipv4 : MIN_PREFIX.ipv6}: no company owns that much address space` });
      continue;
    }
    if (seen.has(cidr.cidr)) {
      errors.push({ line: n + 1, message: `${cidr.cidr} is listed twice` });
      continue;
    }
    seen.add(cidr.cidr);
    const d = resolveCompanyDomain(fields[1]!);
    if (!d.ok) {
      errors.push({ line: n + 1, message: `domain: ${d.message}` });
      continue;
    }
    const name = fields[2] ? fields[2].slice(0, 200) : null;
    ranges.push({ cidr: cidr.cidr, domain: d.domain, name });
    if (ranges.length > MAX_RANGES) {
      errors.push({ line: n + 1, message: `more than ${MAX_RANGES} ranges` });
      break;
    }
  }
  return { ranges: errors.length > 0 ? [] : ranges, errors };
}

/**
 * Longest-prefix match of addresses against loaded ranges: one hash look-up
 * per prefix length in use, most specific first. IPv4-mapped IPv6 addresses
 * (::ffff:a.b.c.d) match IPv4 ranges.
 */
export class IpRangeIndex {
  private readonly byKind = new Map<string, { lengths: number[]; nets: Map<string, IpRange> }>();

  constructor(ranges: readonly IpRange[]) {
    for (const r of ranges) {
      const c = parseCidr(r.cidr);
      if (!c) continue;
      let k = this.byKind.get(c.kind);
      if (!k) this.byKind.set(c.kind, (k = { lengths: [], nets: new Map() }));
      const key = `${c.bits}/${c.key}`;
      if (!k.nets.has(key)) k.nets.set(key, r);
      if (!k.lengths.includes(c.bits)) k.lengths.push(c.bits);
    }
    for (const k of this.byKind.values()) k.lengths.sort((a, b) => b - a);
  }

  get size(): number {
    let n = 0;
    for (const k of this.byKind.values()) n += k.nets.size;
    return n;
  }

  /** The most specific range holding `ip`, or null (also for a malformed address). */
  lookup(ip: string | null | undefined): IpRange | null {
    if (!ip || this.byKind.size === 0 || !ipaddr.isValid(ip)) return null;
    const addr = ipaddr.process(ip);
    const k = this.byKind.get(addr.kind());
    if (!k) return null;
    const bytes = bytesOf(addr);
    for (const bits of k.lengths) {
      const hit = k.nets.get(`${bits}/${networkKey(bytes, bits)}`);
      if (hit) return hit;
    }
    return null;
  }
}
