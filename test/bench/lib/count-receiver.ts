/**
 * A webhook receiver for the in-process drain benches (its own process, forked with IPC): answers every
 * POST 200 at once and counts requests and distinct X-SVC-Delivery ids. Messages: 'stats' -> { requests,
 * distinct, cpuMs }; 'reset' -> the same, then zero. Sends { url } once listening.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let requests = 0;
let ids = new Set<string>();
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    requests++;
    ids.add(String(req.headers['x-svc-delivery']));
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
process.on('message', (m: string) => {
  const c = process.cpuUsage();
  process.send!({ requests, distinct: ids.size, cpuMs: (c.user + c.system) / 1000 });
  if (m === 'reset') {
    requests = 0;
    ids = new Set();
  }
});
process.on('disconnect', () => process.exit(0));
