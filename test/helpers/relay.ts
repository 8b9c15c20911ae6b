import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay between svc and PostgreSQL that the test can cut and restore:
 * the database "goes away" (every connection dropped, new ones refused) and
 * comes back on the same address.
 */
export async function relay(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  const listen = async () => {
    server = net.createServer((client) => {
      const upstream = net.connect(target.port, target.host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => server!.listen(port, '127.0.0.1', r));
    port = (server!.address() as AddressInfo).port;
  };
  await listen();
  return {
    get port() {
      return port;
    },
    async down() {
      const s = server!;
      server = null;
      for (const sock of sockets) sock.destroy();
      await new Promise((r) => s.close(r));
    },
    up: listen,
    async close() {
      if (server) await this.down();
    },
  };
}
