import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuardedDispatcher } from '../../src/outbound/guard.js';
import { ATTEMPT_TIMEOUT_MS, sendSigned, USER_AGENT } from '../../src/outbound/sender.js';
import { VERSION } from '../../src/version.js';

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;

describe('sendSigned against a real receiver on loopback', () => {
  let server: Server;
  let base = '';
  let handler: Handler = (_req, _body, res) => res.end();
  const open = new Set<ServerResponse>();
  const dispatcher = createGuardedDispatcher({ allowPrivate: true });

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        open.add(res);
        res.on('close', () => open.delete(res));
        handler(req, Buffer.concat(chunks), res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const res of open) res.destroy();
    await dispatcher.close();
    await new Promise((r) => server.close(r));
  });

  const send = (body: string, timeoutMs?: number) =>
    sendSigned({ dispatcher, url: `${base}/in`, body, key: 'whsec_unit', eventType: 'conversion', deliveryId: 'dlv_unit_1', timeoutMs });

  it('allows 5 s per attempt', () => {
    expect(ATTEMPT_TIMEOUT_MS).toBe(5_000);
  });

  it('posts the exact body bytes with every header the receiver needs', async () => {
    let seen: { headers: IncomingMessage['headers']; body: Buffer; method?: string } | undefined;
    handler = (req, body, res) => {
      seen = { headers: req.headers, body, method: req.method };
      res.writeHead(204).end();
    };
    const body = '{"event":"conversion","note":"caf\u00e9 \u2713","n":1}';
    const r = await send(body);
    expect(r).toMatchObject({ ok: true, status: 204, errorClass: null, excerpt: null });
    expect(seen!.method).toBe('POST');
    expect(seen!.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect(seen!.headers).toMatchObject({
      'content-type': 'application/json',
      'x-svc-event': 'conversion',
      'x-svc-delivery': 'dlv_unit_1',
      'x-svc-signature': createHmac('sha256', 'whsec_unit').update(Buffer.from(body, 'utf8')).digest('hex'),
      'user-agent': `svc-webhooks/${VERSION} (+https://www.npmjs.com/package/@svc-hq/svc)`,
    });
    expect(USER_AGENT).toContain(VERSION);
  });

  it('svc mode sends byte for byte the headers it sent before signing modes existed, given a key or svc keys', async () => {
    const raw: string[][] = [];
    handler = (req, _body, res) => {
      raw.push(req.rawHeaders);
      res.writeHead(204).end();
    };
    const body = '{"a":1}';
    await send(body);
    await sendSigned({ dispatcher, url: `${base}/in`, body, signing: { mode: 'svc', current: 'whsec_unit', previous: null, previousUntil: null }, eventType: 'conversion', deliveryId: 'dlv_unit_1' });
    // Recorded from the sender as it was before this change (host, connection and content-length come from undici).
    const before = [
      'host', base.slice('http://'.length),
      'connection', 'keep-alive',
      'content-type', 'application/json',
      'user-agent', `svc-webhooks/${VERSION} (+https://www.npmjs.com/package/@svc-hq/svc)`,
      'x-svc-signature', createHmac('sha256', 'whsec_unit').update(body).digest('hex'),
      'x-svc-event', 'conversion',
      'x-svc-delivery', 'dlv_unit_1',
      'content-length', '7',
    ];
    expect(raw).toEqual([before, before]);
  });

  it('keeps only a bounded excerpt of a large answer, and a non-2xx is a failed attempt', async () => {
    handler = (_req, _body, res) => res.writeHead(500).end('E'.repeat(100_000));
    const r = await send('{}');
    expect(r).toMatchObject({ ok: false, status: 500, errorClass: 'http_status', message: 'receiver answered 500' });
    expect(r.excerpt).toBe('E'.repeat(1024));
  });

  it('keeps a chunked answer (no declared length) whole when short and its first 1024 bytes when long', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(202, { 'content-type': 'text/plain' });
      res.write('caf\u00e9 ');
      res.end('ok');
    };
    expect(await send('{}')).toMatchObject({ ok: true, status: 202, errorClass: null, message: null, excerpt: 'caf\u00e9 ok' });
    handler = (_req, _body, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      for (let i = 0; i < 40; i++) res.write('0123456789'.repeat(10));
      res.end();
    };
    const long = await send('{}');
    expect(long).toMatchObject({ ok: false, status: 503, errorClass: 'http_status', message: 'receiver answered 503' });
    expect(long.excerpt).toBe('0123456789'.repeat(103).slice(0, 1024));
    // The connection cut after the excerpt does not spoil the next attempt.
    handler = (_req, _body, res) => res.writeHead(200).end('{"ok":true}');
    expect(await send('{}')).toMatchObject({ ok: true, status: 200, excerpt: '{"ok":true}' });
  });

  it('counts the deadline from the start of the attempt, also while it waits for a connection', async () => {
    const one = createGuardedDispatcher({ allowPrivate: true, connections: 1 });
    try {
      handler = () => undefined; // holds every request: the second waits for the first's connection
      const url = `${base}/in`;
      const t0 = performance.now();
      const [a, b] = await Promise.all(
        ['d1', 'd2'].map((deliveryId) => sendSigned({ dispatcher: one, url, body: '{}', key: 'k', eventType: 'click', deliveryId, timeoutMs: 300 })),
      );
      expect(a).toMatchObject({ ok: false, status: null, errorClass: 'timeout' });
      expect(b).toMatchObject({ ok: false, status: null, errorClass: 'timeout' });
      expect(performance.now() - t0).toBeLessThan(2_000);
    } finally {
      await one.destroy();
    }
  });

  it('cuts a receiver that sends its headers and then dribbles the body: the deadline covers the body too', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('x');
      const t = setInterval(() => res.write('x'), 20);
      res.on('close', () => clearInterval(t));
    };
    const r = await send('{}', 300);
    expect(r).toMatchObject({ ok: false, status: 200, errorClass: 'timeout', excerpt: null });
    expect(r.message).toMatch(/^no complete answer within/);
  });

  it('cuts a receiver that never answers', async () => {
    handler = () => undefined;
    const r = await send('{}', 300);
    expect(r).toMatchObject({ ok: false, status: null, errorClass: 'timeout' });
  });

  it('classifies a refused connection and a refused destination, never throwing', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const conn = await sendSigned({ dispatcher, url: `http://127.0.0.1:${port}/`, body: '{}', key: 'k', eventType: 'click', deliveryId: 'd' });
    expect(conn).toMatchObject({ ok: false, status: null, errorClass: 'connection' });
    const guarded = createGuardedDispatcher({ allowPrivate: false });
    try {
      const refused = await sendSigned({ dispatcher: guarded, url: `${base}/in`, body: '{}', key: 'k', eventType: 'click', deliveryId: 'd' });
      expect(refused).toMatchObject({ ok: false, status: null, errorClass: 'destination_refused' });
    } finally {
      await guarded.close();
    }
  });
});
