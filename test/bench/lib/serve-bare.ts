/**
 * How every bare baseline server of the benchmarks runs as its own process:
 * listens on 127.0.0.1 (port 0 picks one), prints `NAME listening on
 * http://127.0.0.1:PORT` once ready (the bench waits for that line), and on
 * SIGTERM or SIGINT stops accepting, closes its connections and exits within
 * two seconds. `beforeExit` runs first (a storing baseline flushes its last
 * group there).
 */
import type http from 'node:http';
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
