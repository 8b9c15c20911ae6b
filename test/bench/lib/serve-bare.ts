/**
 * How every bare baseline server of the benchmarks runs as its own process:
 * listens on 127.0.0.1 (port 0 picks one), prints `NAME listening on
 * http://127.0.0.1:PORT` once ready (the bench waits for that line), and on
 * SIGTERM or SIGINT stops accepting, closes its connections and exits within
 * two seconds. `beforeExit` runs first (a storing baseline flushes its last
 * group there).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export function serveUntilSignal(server: http.Server, name: string, port: number, beforeExit?: () => Promise<void>): void {
  server.listen(port, '127.0.0.1', () => {
    process.stdout.write(`${name} listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  });
  const stop = () => {
    server.close();
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2_000).unref();
    void (beforeExit ?? (() => Promise.resolve()))().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** The row a storing baseline stores for an event: svc's events columns, in the order of its INSERT. */
export type BareEventRow = [site: string, session: string, profile: string, visitor: string | null, type: string, ts: number, body: string, receivedAt: number];

/**
 * The request handling of the storing baselines (bare-store, bare-store-pg): reads the body, parses it, hands
 * `add` the event's row and answers 201 with the stored id once `add` resolves (400 on bad JSON, 500 if the
 * store failed). Everything svc does besides (checks, sessions, profiles) is left out on purpose.
 */
export function storingServer(add: (row: BareEventRow) => Promise<number | string>): http.Server {
  return http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let e: { site_id?: unknown; session_id?: unknown; visitor_id?: unknown; type?: unknown };
      try {
        e = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof e;
      } catch {
        res.writeHead(400, { 'Content-Type': 'application/json' }).end('{"error":{"code":"invalid_json"}}');
        return;
      }
      const now = Date.now();
      const body = JSON.stringify(e);
      add([String(e.site_id), String(e.session_id), `prof_${String(e.session_id)}`, e.visitor_id === undefined ? null : String(e.visitor_id), String(e.type), now, body, now]).then(
        (id) => {
          const out = Buffer.from(`{"ok":true,"id":${id}}`);
          res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': out.length }).end(out);
        },
        () => res.writeHead(500).end(),
      );
    });
    req.on('error', () => res.destroy());
  });
}
