import { Pool } from 'undici';

/**
 * Keep-alive pools for a load spread over several origins, like a load balancer would:
 * connection i goes to origin i mod n, and each origin's Pool has exactly its share of
 * the connections (null for an origin that gets none).
 */
export function originPools(origins: readonly string[], connections: number): { pools: (Pool | null)[]; share: (k: number) => number } {
  if (origins.length === 0) throw new Error('no origin to send the load to');
  const n = origins.length;
  const share = (k: number) => Math.floor(connections / n) + (k < connections % n ? 1 : 0);
  const pools = origins.map((origin, k) =>
    share(k) === 0
      ? null
      : new Pool(origin, {
          connections: share(k),
          pipelining: 1,
          keepAliveTimeout: 60_000,
          keepAliveMaxTimeout: 60_000,
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
          connectTimeout: 10_000,
        }),
  );
  return { pools, share };
}
