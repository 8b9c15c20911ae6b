/**
 * Which process a TCP connection belongs to, from its local port (Linux
 * /proc): the webhook receiver counts requests per remote port, and this maps
 * those ports to the svc instance that owns the socket, so the benchmark can
 * say how many deliveries each of several instances sent. Read-only, and only
 * of processes this benchmark started.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Local ports of the TCP sockets process `pid` has open to `remotePort`
 * (every socket when undefined); empty where /proc is unavailable or the
 * process is gone.
 */
export function localTcpPorts(pid: number, remotePort?: number): number[] {
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      if (cols.length < 10 || !inodes.has(cols[9]!)) continue;
      const portOf = (addr: string) => parseInt(addr.slice(addr.lastIndexOf(':') + 1), 16);
      if (remotePort !== undefined && portOf(cols[2]!) !== remotePort) continue;
      const port = portOf(cols[1]!);
      if (Number.isInteger(port)) ports.push(port);
    }
  }
  return ports;
}

/**
 * Local port -> index of the process (in `pids`) that owned it when sampled,
 * for the connections to `remotePort` (the receiver's).
 * `sample()` is cheap enough to call every few hundred ms while the
 * connections are open; ports seen under two processes (reused) keep the
 * latest owner.
 */
export class PortOwners {
  readonly owner = new Map<number, number>();

  constructor(
    private readonly pids: (number | undefined)[],
    private readonly remotePort: number,
  ) {}

  sample(): void {
    this.pids.forEach((pid, i) => {
      if (pid === undefined) return;
      for (const port of localTcpPorts(pid, this.remotePort)) this.owner.set(port, i);
    });
  }

  /** Splits [port, requests] pairs by owner: one count per process, plus the requests over ports never seen. */
  attribute(peers: [number, number][]): { perProcess: number[]; unknown: number } {
    const perProcess = this.pids.map(() => 0);
    let unknown = 0;
    for (const [port, n] of peers) {
      const i = this.owner.get(port);
      if (i === undefined) unknown += n;
      else perProcess[i]! += n;
    }
    return { perProcess, unknown };
  }
}

/**
 * PostgreSQL backend processes serving the connections `clientPids` have open
 * to `serverPort` on this host, matched by the client port PostgreSQL shows in
 * each backend's process title ("postgres: ... user db 127.0.0.1(54321) idle").
 * Empty for a server on another host, or where /proc is unavailable.
 */
export function pgBackendPids(clientPids: number[], serverPort: number): number[] {
  const ports = new Set<number>();
  for (const pid of clientPids) for (const port of localTcpPorts(pid, serverPort)) ports.add(port);
  if (ports.size === 0) return [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const backends: number[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let title: string;
    try {
      title = readFileSync(`/proc/${e}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const m = /^postgres: .*\((\d+)\)/.exec(title);
    if (m && ports.has(Number(m[1]))) backends.push(Number(e));
  }
  return backends;
}

/** The local PostgreSQL port of a database URL, or null when the server is not on this host. */
export function localPgPort(databaseUrl: string): number | null {
  try {
    const u = new URL(databaseUrl);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (!['127.0.0.1', 'localhost', '::1', ''].includes(host)) return null;
    return u.port ? Number(u.port) : 5432;
  } catch {
    return null;
  }
}
