import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { cleanup, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { query } from '../helpers/db.js';

let svc: Svc;
let dataDir: string;
let site: string;
let port: number;

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  // Short timeouts so the slow-request cases end quickly; headers must not exceed the request timeout.
  svc = await startSvc({ dataDir, env: { SVC_HEADERS_TIMEOUT_MS: '400', SVC_REQUEST_TIMEOUT_MS: '800' } });
  port = Number(new URL(svc.url).port);
});
afterAll(async () => {
  expect(await svc.stop()).toBe(0);
  cleanup(dataDir);
});

interface Raw {
  status: number;
  headers: string;
  body: any;
}

/** Writes raw bytes on a fresh connection and reads until the server closes it. */
function raw(bytes: string | Buffer, opts: { end?: boolean } = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.setTimeout(15_000, () => {
      s.destroy();
      reject(new Error('the server neither answered nor closed the connection'));
    });
    s.on('connect', () => (opts.end === false ? s.write(bytes) : s.end(bytes)));
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => {});
    s.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
      let body: unknown = text.slice(head.length + 4);
      try {
        body = JSON.parse(body as string);
      } catch {
        // left as text: the assertions below say what was expected
      }
      resolve({ status: m ? Number(m[1]) : 0, headers: head, body });
    });
  });
}

const events = () => query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM events WHERE site_id = ?', site)[0]!.n;
const body = () => JSON.stringify({ site_id: site, session_id: 'framing', type: 'pageview' });

describe('broken HTTP framing is answered with the JSON error shape', () => {
  const head = (extra: string) => `POST /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}\r\n`;
  it.each([
    ['a negative Content-Length', () => head('Content-Length: -1\r\n') + body(), /Content-Length/],
    ['a non-numeric Content-Length', () => head('Content-Length: 12a\r\n') + body(), /Content-Length/],
    ['two Content-Length headers', () => head(`Content-Length: ${body().length}\r\nContent-Length: ${body().length + 1}\r\n`) + body(), /once/],
    ['Content-Length with Transfer-Encoding', () => head(`Content-Length: ${body().length}\r\nTransfer-Encoding: chunked\r\n`) + `0\r\n\r\n`, /Transfer-Encoding/],
    ['a bad chunk size', () => head('Transfer-Encoding: chunked\r\n') + `zz\r\n${body()}\r\n0\r\n\r\n`, /chunk size/],
    ['an 80 KB header', () => head(`X-Big: ${'a'.repeat(80_000)}\r\nContent-Length: ${body().length}\r\n`) + body(), /16384 bytes/],
    ['a 60 KB URL', () => `GET /api/pulse/v1/profile?email=${'a'.repeat(60_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, /16384 bytes/],
    ['a missing Host', () => `POST /api/events HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: ${body().length}\r\n\r\n${body()}`, /Host/],
    ['a garbage request line', () => 'HELLO THERE FRIEND\r\n\r\n', /HTTP method/],
  ])('%s: 400 bad_request, stores nothing', async (_name, make, message) => {
    const before = events();
    const r = await raw(make());
    expect(r.status).toBe(400);
    expect(r.headers).toMatch(/content-type: application\/json/i);
    expect(r.body.error.code).toBe('bad_request');
    expect(r.body.error.message).toMatch(message);
    expect(events()).toBe(before);
  });

  it('headers that stop arriving: 408 request_timeout', async () => {
    const r = await raw('POST /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic', { end: false });
    expect(r.status).toBe(408);
    expect(r.body.error).toMatchObject({ code: 'request_timeout' });
  });

  it('a body that stops arriving: 408 request_timeout, stores nothing', async () => {
    const before = events();
    const b = body();
    const r = await raw(head(`Content-Length: ${b.length}\r\n`) + b.slice(0, 10), { end: false });
    expect(r.status).toBe(408);
    expect(r.body.error).toMatchObject({ code: 'request_timeout' });
    expect(events()).toBe(before);
  });

  it('a well-formed request on the same server is still answered', async () => {
    const b = body();
    const r = await raw(head(`Content-Length: ${b.length}\r\nConnection: close\r\n`) + b, { end: false });
    expect(r.status).toBe(201);
    expect(r.body.event_id).toMatch(/^evt_/);
  });
});

describe('a loopback server refuses a foreign Host (DNS rebinding)', () => {
  it('403 forbidden_host in the JSON error shape on a non-public path; the public paths are exempt', async () => {
    const r = await raw('GET /api/pulse/v1/openapi.json HTTP/1.1\r\nHost: rebind.example\r\nConnection: close\r\n\r\n', { end: false });
    expect(r.status).toBe(403);
    const requestId = /^x-request-id: (\S+)$/im.exec(r.headers)?.[1];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.body).toEqual({
      error: { code: 'forbidden_host', message: 'Host or Origin header does not name this local server', details: {}, request_id: requestId },
    });
    const b = body();
    const ok = await raw(`POST /api/events HTTP/1.1\r\nHost: rebind.example\r\nContent-Type: application/json\r\nContent-Length: ${b.length}\r\nConnection: close\r\n\r\n${b}`, { end: false });
    expect(ok.status).toBe(201);
  });
});
