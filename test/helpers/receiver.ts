import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export type Behaviour = (r: Received, n: number) => { status: number; body?: string; headers?: Record<string, string> } | 'hang' | Promise<{ status: number; body?: string }>;

/** A real HTTP receiver on loopback that records every request and answers as `behaviour` says. */
export async function startReceiver(behaviour: Behaviour = () => ({ status: 200, body: 'ok' })) {
  const received: Received[] = [];
  let current = behaviour;
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      const out = current(r, received.length);
      if (out === 'hang') {
        hanging.add(res);
        return;
      }
      void Promise.resolve(out).then((o) => {
        res.writeHead(o.status, { 'content-type': 'text/plain', ...('headers' in o ? o.headers : {}) });
        res.end(o.body ?? '');
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    setBehaviour(b: Behaviour) {
      current = b;
    },
    /** Answers every held request with 200. */
    release() {
      for (const res of hanging) res.writeHead(200).end('released');
      hanging.clear();
    },
    async waitFor(n: number, timeoutMs = 20_000, filter: (r: Received) => boolean = () => true) {
      const deadline = Date.now() + timeoutMs;
      while (received.filter(filter).length < n) {
        if (Date.now() > deadline) throw new Error(`receiver got ${received.filter(filter).length} of ${n} requests`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return received.filter(filter);
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
