import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import {
  assertDestinationAllowed,
  checkDestinationUrl,
  createGuardedDispatcher,
  DestinationRefusedError,
  guardedLookup,
  isPublicAddress,
  type LookupFn,
} from '../../src/outbound/guard.js';

// A lookup that must never be consulted (IP literals are judged without DNS).
const noLookup: LookupFn = (hostname) => Promise.reject(new Error(`unexpected lookup of ${hostname}`));

const table = (entries: Record<string, string[]>): LookupFn => async (hostname) => {
  const addrs = entries[hostname];
  if (!addrs) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

describe('WHATWG URL parsing normalizes IPv4 spellings before the guard sees them', () => {
  it.each([
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://017700000001/', '127.0.0.1'],
    ['http://0x7f000001/', '127.0.0.1'],
    ['http://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]'],
  ])('%s -> %s', (url, host) => {
    expect(new URL(url).hostname).toBe(host);
  });
});

describe('checkDestinationUrl', () => {
  const refused = [
    'http://127.0.0.1/hook',
    'http://localhost/hook',
    'http://localhost./hook',
    'http://api.localhost/hook',
    'http://10.1.2.3/',
    'http://172.16.0.1/',
    'http://172.31.255.255/',
    'http://192.168.1.10/',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://224.0.0.1/',
    'http://255.255.255.255/',
    'http://240.0.0.1/',
    'http://192.0.2.1/',
    'http://198.18.0.1/',
    'http://[::1]/',
    'http://[::]/',
    'http://[fc00::1]/',
    'http://[fd12:3456::1]/',
    'http://[fe80::1]/',
    'http://[fec0::1]/',
    'http://[ff02::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[64:ff9b::7f00:1]/',
    'http://[::7f00:1]/',
    'http://[2001:db8::1]/',
    'http://[2002:7f00:1::1]/',
    'http://[2001::1]/',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://017700000001/',
    'https://127.0.0.1:8443/',
    // alternate spellings and parser tricks: all denote a private host
    'http://0x7f.0x0.0x0.0x1/',
    'http://%31%32%37.0.0.1/',
    'http://\uFF11\uFF12\uFF17.0.0.1/', // full-width digits
    'http://\u24DB\u24DE\u24D2\u24D0\u24DB\u24D7\u24DE\u24E2\u24E3/', // circled letters: IDNA maps them to localhost
    'http://LOCALHOST:8080/',
    'http://127.0.0.1./',
    'http://0/',
    'http://10.1/',
    'http://127.0.0.1#@public.example.com/',
    'http://127.0.0.1\\@public.example.com/',
    'http:/\\127.0.0.1/',
    'http://[0:0:0:0:0:ffff:127.0.0.1]/',
    'http://[::ffff:0:127.0.0.1]/', // IPv4-translated (RFC 6145)
    'http://[64:ff9b:1::a00:1]/', // local-use NAT64 (RFC 8215)
    'http://[::ffff:a9fe:a9fe]/',
  ];

  it.each(refused)('refuses %s', async (url) => {
    const r = await checkDestinationUrl(url, { allowPrivate: false, lookup: noLookup });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/not a publicly routable address|loopback name/);
  });

  it.each([
    ['http://user:pw@example.com/', /credentials/],
    ['http://user@example.com/', /credentials/],
    ['http://public.example.com@127.0.0.1/', /credentials/],
    ['http://127.0.0.1:99999/', /not a valid absolute URL/],
    ['http://93.184.216.34:0/', /port 0 cannot be connected to/],
    ['https://93.184.216.34:00/', /port 0 cannot be connected to/],
    ['http://[fe80::1%25eth0]/', /not a valid absolute URL/],
    ['', /not a valid absolute URL/],
    ['ftp://x/', /scheme ftp: is not allowed/],
    ['file:///etc/passwd', /scheme file: is not allowed/],
    ['javascript:alert(1)', /scheme javascript: is not allowed/],
    ['not a url', /not a valid absolute URL/],
    ['/relative/path', /not a valid absolute URL/],
  ])('refuses %s', async (url, reason) => {
    const r = await checkDestinationUrl(url, { allowPrivate: true, lookup: noLookup });
    expect(r).toEqual({ ok: false, reason: expect.stringMatching(reason) });
  });

  it('accepts a public IP literal without any lookup', async () => {
    const r = await checkDestinationUrl('https://93.184.216.34/hooks?x=1', { allowPrivate: false, lookup: noLookup });
    expect(r).toMatchObject({ ok: true, addresses: ['93.184.216.34'] });
    if (r.ok) expect(r.url.href).toBe('https://93.184.216.34/hooks?x=1');
    const v6 = await checkDestinationUrl('http://[2606:2800:220:1:248:1893:25c8:1946]:8080/', {
      allowPrivate: false,
      lookup: noLookup,
    });
    expect(v6).toMatchObject({ ok: true, addresses: ['2606:2800:220:1:248:1893:25c8:1946'] });
  });

  it('accepts a name that resolves only to public addresses', async () => {
    const lookup = table({ 'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'] });
    const r = await checkDestinationUrl('https://hooks.example.com/in', { allowPrivate: false, lookup });
    expect(r).toMatchObject({ ok: true, addresses: ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'] });
  });

  it('refuses a name with one private address among public ones, naming it', async () => {
    const lookup = table({ 'mixed.example.com': ['93.184.216.34', '10.0.0.5', '8.8.8.8'] });
    const r = await checkDestinationUrl('https://mixed.example.com/', { allowPrivate: false, lookup });
    expect(r).toEqual({ ok: false, reason: 'mixed.example.com resolves to 10.0.0.5, which is not publicly routable' });
    const mapped = table({ 'mapped.example.com': ['::ffff:169.254.169.254'] });
    expect((await checkDestinationUrl('https://mapped.example.com/', { allowPrivate: false, lookup: mapped })).ok).toBe(false);
  });

  it('refuses a name that does not resolve or resolves to nothing', async () => {
    const r = await checkDestinationUrl('https://nx.example.com/', { allowPrivate: false, lookup: table({}) });
    expect(r).toEqual({ ok: false, reason: 'cannot resolve nx.example.com (ENOTFOUND)' });
    const empty = await checkDestinationUrl('https://e.example.com/', { allowPrivate: false, lookup: async () => [] });
    expect(empty).toEqual({ ok: false, reason: 'e.example.com has no addresses' });
  });

  it('with allowPrivate accepts loopback and private destinations', async () => {
    expect(await checkDestinationUrl('http://127.0.0.1:9/', { allowPrivate: true, lookup: noLookup })).toMatchObject({ ok: true });
    const lookup = table({ 'dev.internal': ['192.168.1.5'] });
    expect(await checkDestinationUrl('http://dev.internal/', { allowPrivate: true, lookup })).toMatchObject({
      ok: true,
      addresses: ['192.168.1.5'],
    });
  });

  it('assertDestinationAllowed throws DestinationRefusedError with the reason', async () => {
    await expect(assertDestinationAllowed('http://[::1]/', { allowPrivate: false })).rejects.toMatchObject({
      name: 'DestinationRefusedError',
      code: 'EDESTINATIONREFUSED',
      message: 'destination refused: ::1 is not a publicly routable address',
    });
    const url = await assertDestinationAllowed(new URL('https://93.184.216.34/x'), { allowPrivate: false, lookup: noLookup });
    expect(url.hostname).toBe('93.184.216.34');
  });
});

describe('isPublicAddress', () => {
  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s is public', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
  });
  it.each([
    '127.0.0.1', '10.0.0.1', '172.16.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
    '255.255.255.255', '240.0.0.1', '192.0.0.8', '192.88.99.1', '198.51.100.7', '203.0.113.9', '192.175.48.1',
    '::1', '::', 'fc00::1', 'fe80::1', 'fe80::1%eth0', 'ff02::1', '::ffff:127.0.0.1', '64:ff9b::808:808', '2001:db8::1',
    '2001:2::1', '2001:20::1', '100::1', '2002::1', '4000::1', '0177.0.0.1', '2130706433', '127.1', 'example.com', '',
  ])('%s is not public', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });
});

describe('guardedLookup (the net.connect lookup option)', () => {
  const call = (fn: ReturnType<typeof guardedLookup>, host: string, options: { all?: boolean; family?: number }) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family: unknown }>((resolve) => {
      fn(host, options, (err, address, family) => resolve({ err, address, family }));
    });

  it('hands back the checked addresses, single or all, honouring the family', async () => {
    const fn = guardedLookup({ allowPrivate: false, lookup: table({ h: ['93.184.216.34', '2606:4700:4700::1111'] }) });
    expect(await call(fn, 'h', {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await call(fn, 'h', { family: 6 })).toEqual({ err: null, address: '2606:4700:4700::1111', family: 6 });
    expect((await call(fn, 'h', { all: true })).address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700:4700::1111', family: 6 },
    ]);
  });

  it('calls back with EDESTINATIONREFUSED when any address is private, unless allowPrivate', async () => {
    const lookup = table({ h: ['93.184.216.34', '127.0.0.1'] });
    const { err } = await call(guardedLookup({ allowPrivate: false, lookup }), 'h', { all: true });
    expect(err).toBeInstanceOf(DestinationRefusedError);
    expect(err).toMatchObject({ code: 'EDESTINATIONREFUSED', message: 'destination refused: h resolves to 127.0.0.1, which is not publicly routable' });
    expect(await call(guardedLookup({ allowPrivate: true, lookup }), 'h', {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
  });

  it('passes resolution errors through', async () => {
    const { err } = await call(guardedLookup({ allowPrivate: false, lookup: table({}) }), 'nx', {});
    expect(err?.code).toBe('ENOTFOUND');
  });
});

describe('createGuardedDispatcher against a real local server', () => {
  let server: Server;
  let port = 0;
  let hits = 0;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits += 1;
      res.end('reached');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const toLoopback = table({ 'hooks.example.test': ['127.0.0.1'] });

  it('refuses at connect time a name that resolves to loopback: the server is never reached', async () => {
    hits = 0;
    const dispatcher = createGuardedDispatcher({ allowPrivate: false, lookup: toLoopback });
    try {
      await expect(
        request(`http://hooks.example.test:${port}/`, { method: 'POST', body: '{}', dispatcher }),
      ).rejects.toMatchObject({ code: 'EDESTINATIONREFUSED', message: expect.stringContaining('127.0.0.1') });
      expect(hits).toBe(0);
    } finally {
      await dispatcher.close();
    }
  });

  it('refuses an IP-literal loopback host, which net.connect would never look up', async () => {
    hits = 0;
    const dispatcher = createGuardedDispatcher({ allowPrivate: false, lookup: noLookup });
    try {
      for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]']) {
        await expect(request(`http://${host}:${port}/`, { dispatcher })).rejects.toMatchObject({ code: 'EDESTINATIONREFUSED' });
      }
      expect(hits).toBe(0);
    } finally {
      await dispatcher.close();
    }
  });

  it('a DNS answer that changes after the pre-check cannot reach a private address', async () => {
    hits = 0;
    let answers = 0;
    const rebinding: LookupFn = async () => [{ address: answers++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
    const opts = { allowPrivate: false, lookup: rebinding };
    const url = await assertDestinationAllowed(`http://rebind.example.test:${port}/`, opts);
    const dispatcher = createGuardedDispatcher(opts);
    try {
      await expect(request(url, { dispatcher })).rejects.toMatchObject({ code: 'EDESTINATIONREFUSED' });
      expect(answers).toBe(2);
      expect(hits).toBe(0);
    } finally {
      await dispatcher.close();
    }
  });

  it('with allowPrivate the same request connects to the looked-up address and reaches the server', async () => {
    hits = 0;
    const dispatcher = createGuardedDispatcher({ allowPrivate: true, lookup: toLoopback });
    try {
      const res = await request(`http://hooks.example.test:${port}/`, { method: 'POST', body: '{}', dispatcher });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe('reached');
      expect(hits).toBe(1);
    } finally {
      await dispatcher.close();
    }
  });

  it('does not follow redirects', async () => {
    const redirecting = createServer((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/` }).end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    const rport = (redirecting.address() as AddressInfo).port;
    hits = 0;
    const dispatcher = createGuardedDispatcher({ allowPrivate: true, lookup: toLoopback });
    try {
      const res = await request(`http://hooks.example.test:${rport}/`, { dispatcher });
      await res.body.dump();
      expect(res.statusCode).toBe(302);
      expect(hits).toBe(0);
    } finally {
      await dispatcher.close();
      await new Promise<void>((resolve) => redirecting.close(() => resolve()));
    }
  });
});
