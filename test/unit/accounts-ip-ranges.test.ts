import { describe, expect, it } from 'vitest';
import { IpRangeIndex, parseCidr, parseRangesCsv, splitCsvLine } from '../../src/domain/accounts/ip-ranges.js';

describe('IP range CSV', () => {
  it('reads cidr,domain[,name] with a header, comments, quotes and CRLF; domains resolved', () => {
    const r = parseRangesCsv('cidr,domain,name\r\n# ours\r\n203.0.113.0/24,https://www.Example.co.uk/,"Example, Ltd"\r\n\r\n2001:db8::/32,acme.com\r\n');
    expect(r.errors).toEqual([]);
    expect(r.ranges).toEqual([
      { cidr: '203.0.113.0/24', domain: 'example.co.uk', name: 'Example, Ltd' },
      { cidr: '2001:db8::/32', domain: 'acme.com', name: null },
    ]);
  });

  it('reports every bad line with its number and loads nothing', () => {
    const r = parseRangesCsv(['10.0.0.0/8,acme.com', '10.0.0.0/33,acme.com', '10.1.0.0/16,bob@gmail.com', 'nonsense', '0.0.0.0/0,acme.com', '::/8,acme.com', '10.0.0.0/8,beta.com', '1.2.3.0/24,acme.com,a,b', '"1.2.3.0/24,acme.com'].join('\n'));
    expect(r.ranges).toEqual([]);
    expect(r.errors.map((e) => e.line)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    expect(r.errors[1]!.message).toContain('free-mail');
    expect(r.errors[5]!.message).toContain('listed twice');
  });

  it('normalizes host bits to the network address and accepts the widest allowed prefixes', () => {
    expect(parseCidr('10.1.2.3/8')?.cidr).toBe('10.0.0.0/8');
    expect(parseCidr('2001:db8:1:2::5/48')?.cidr).toBe('2001:db8:1::/48');
    expect(parseCidr('10/8')).toBeNull();
    expect(parseRangesCsv('10.0.0.0/8,acme.com\n2001::/16,acme.com').errors).toEqual([]);
    expect(parseRangesCsv('10.0.0.0/7,acme.com').errors).toHaveLength(1);
    expect(parseRangesCsv('2001::/15,acme.com').errors).toHaveLength(1);
  });

  it('splits quoted fields', () => {
    expect(splitCsvLine('a,"b,c",d')).toEqual(['a', 'b,c', 'd']);
    expect(splitCsvLine('"say ""hi""",x')).toEqual(['say "hi"', 'x']);
    expect(splitCsvLine('a,')).toEqual(['a', '']);
    expect(splitCsvLine('"a"b,c')).toBeNull();
  });
});

describe('IP range look-up', () => {
  const ix = new IpRangeIndex([
    { cidr: '10.0.0.0/8', domain: 'wide.com', name: null },
    { cidr: '10.1.0.0/16', domain: 'narrow.com', name: null },
    { cidr: '10.1.2.3/32', domain: 'single.com', name: null },
    { cidr: '2001:db8::/32', domain: 'six.com', name: null },
  ]);

  it('matches the boundaries of a range and nothing outside', () => {
    expect(ix.lookup('10.0.0.0')?.domain).toBe('wide.com');
    expect(ix.lookup('10.255.255.255')?.domain).toBe('wide.com');
    expect(ix.lookup('9.255.255.255')).toBeNull();
    expect(ix.lookup('11.0.0.0')).toBeNull();
    expect(ix.lookup('2001:db8:ffff:ffff:ffff:ffff:ffff:ffff')?.domain).toBe('six.com');
    expect(ix.lookup('2001:db9::')).toBeNull();
  });

  it('prefers the most specific range', () => {
    expect(ix.lookup('10.1.0.0')?.domain).toBe('narrow.com');
    expect(ix.lookup('10.1.2.3')?.domain).toBe('single.com');
    expect(ix.lookup('10.1.2.4')?.domain).toBe('narrow.com');
    expect(ix.lookup('10.2.0.0')?.domain).toBe('wide.com');
  });

  it('matches IPv4-mapped IPv6 addresses against IPv4 ranges and ignores junk', () => {
    expect(ix.lookup('::ffff:10.1.2.3')?.domain).toBe('single.com');
    expect(ix.lookup('not an ip')).toBeNull();
    expect(ix.lookup(null)).toBeNull();
    expect(ix.lookup('')).toBeNull();
    expect(new IpRangeIndex([]).lookup('10.0.0.1')).toBeNull();
    expect(ix.size).toBe(4);
  });
});
