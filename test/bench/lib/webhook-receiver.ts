/**
 * The webhook receiver of the delivery benchmark: a node:http server on
 * 127.0.0.1 in its own process, driven over IPC (lib/ipc.ts). It reads each
 * request body, answers 200 {"ok":true} at once (or, in `hold` mode, after
 * `holdMs`: a slow receiver that lets a backlog build without failing any
 * attempt), and records per request its arrival time (epoch ms, sub-ms:
 * performance.timeOrigin + performance.now(), comparable across processes of
 * one host), its X-SVC-Delivery id and the event sequence number carried in
 * the body (lib/webhook-event.ts).
 *
 * Requests are counted per tracked range of sequence numbers (one range per
 * benchmark phase): requests, distinct delivery ids, distinct events, the
 * first arrival of every event, bytes. One in `verifyEvery` signatures is
 * checked against the destination secret. A range may be limited to one
 * request path (`path`, e.g. /hook/2): with several destinations, each posting
 * to a path of its own, one range per destination over the same sequence
 * numbers counts each destination's deliveries apart.
 *
 * Requests (see ReceiverStats for the answers):
 *   { type: 'listen' }                               -> { url }
 *   { type: 'track', name, from, to, secret?, path? } -> null
 *   { type: 'mode', mode: 'ok' | 'hold', holdMs? }   -> { released }  (switching to ok answers held requests now)
 *   { type: 'stats', name }                          -> RangeStats
 *   { type: 'arrivals', name }                       -> number[] (first arrival per seq from `from`, -1 when none)
 *   { type: 'peers', name }                          -> [remotePort, requests][] (which connection, hence which
 *                                                       sender process, the requests of the range came over)
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isEntryPoint, serveRequests } from './ipc.js';
import { seqOf } from './webhook-event.js';

export interface RangeStats {
  name: string;
  from: number;
  to: number;
  requests: number;
  distinctDeliveries: number;
  distinctEvents: number;
  /** Requests beyond the first for a delivery id (at-least-once redeliveries). */
  duplicateRequests: number;
  /** Events that arrived under more than one delivery id (would mean fan-out created two deliveries). */
  eventsWithSeveralDeliveryIds: number;
  /** Requests without an X-SVC-Delivery header. */
  missingDeliveryId: number;
  bytes: number;
  firstAt: number | null;
  /** Arrival of the latest event seen for the first time. */
  lastNewAt: number | null;
  lastAt: number | null;
  signaturesChecked: number;
  badSignatures: number;
  /** Requests whose body carried no sequence number, over the whole run (all ranges). */
  untracked: number;
  held: number;
  /** CPU the receiver process has used since it started, ms. */
  cpuMs: number;
}

interface Range {
  name: string;
  from: number;
  to: number;
  /** Only requests to this path (without query) count here; null: any path. */
  path: string | null;
  secret: string | null;
  requests: number;
  deliveries: Map<string, number>;
  firstArrival: Float64Array;
  distinctEvents: number;
  severalIds: number;
  missingDeliveryId: number;
  bytes: number;
  firstAt: number | null;
  lastNewAt: number | null;
  lastAt: number | null;
  checked: number;
  bad: number;
  /** Requests per remote port of the sender's connection. */
  peers: Map<number, number>;
}

const MAX_RANGE = 20_000_000;
const RESPONSE = Buffer.from('{"ok":true}');
const RESPONSE_HEADERS = { 'Content-Type': 'application/json', 'Content-Length': RESPONSE.length };

function startReceiver() {
  const ranges: Range[] = [];
  let untracked = 0;
  let mode: 'ok' | 'hold' = 'ok';
  let holdMs = 0;
  let verifyEvery = 16;
  const held = new Map<http.ServerResponse, NodeJS.Timeout>();

  const answer = (res: http.ServerResponse) => {
    const t = held.get(res);
    if (t) {
      clearTimeout(t);
      held.delete(res);
    }
    if (!res.destroyed && !res.headersSent) {
      res.writeHead(200, RESPONSE_HEADERS);
      res.end(RESPONSE);
    }
  };

  const record = (body: Buffer, reqPath: string, peerPort: number, deliveryId: string | undefined, signature: string | undefined, at: number) => {
    const seq = seqOf(body);
    let range: Range | undefined;
    for (const r of ranges) {
      if (seq >= r.from && seq < r.to && (r.path === null || r.path === reqPath)) {
        range = r;
        break;
      }
    }
    if (!range) {
      untracked++;
      return;
    }
    range.requests++;
    range.bytes += body.length;
    range.peers.set(peerPort, (range.peers.get(peerPort) ?? 0) + 1);
    range.firstAt ??= at;
    range.lastAt = at;
    const i = seq - range.from;
    const newEvent = range.firstArrival[i] === 0;
    if (newEvent) {
      range.firstArrival[i] = at;
      range.distinctEvents++;
      range.lastNewAt = at;
    }
    if (deliveryId === undefined) {
      range.missingDeliveryId++;
    } else if (!range.deliveries.has(deliveryId)) {
      // An event seen before under another delivery id: two deliveries for one event and destination.
      if (!newEvent) range.severalIds++;
      range.deliveries.set(deliveryId, seq);
    }
    if (range.secret !== null && range.requests % verifyEvery === 1) {
      range.checked++;
      const expected = createHmac('sha256', range.secret).update(body).digest('hex');
      if (signature !== expected) range.bad++;
    }
  };

  const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.timeOrigin + performance.now();
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const id = req.headers['x-svc-delivery'];
      const sig = req.headers['x-svc-signature'];
      const reqPath = (req.url ?? '/').split('?', 1)[0]!;
      record(body, reqPath, req.socket.remotePort ?? 0, typeof id === 'string' ? id : undefined, typeof sig === 'string' ? sig : undefined, at);
      if (mode === 'hold') held.set(res, setTimeout(() => answer(res), holdMs));
      else answer(res);
    });
    req.on('error', () => res.destroy());
    res.on('close', () => {
      const t = held.get(res);
      if (t) {
        clearTimeout(t);
        held.delete(res);
      }
    });
  });

  const stats = (name: string): RangeStats => {
    const r = ranges.find((x) => x.name === name);
    if (!r) throw new Error(`no tracked range ${name}`);
    const cpu = process.cpuUsage();
    return {
      name,
      from: r.from,
      to: r.to,
      requests: r.requests,
      distinctDeliveries: r.deliveries.size,
      distinctEvents: r.distinctEvents,
      duplicateRequests: r.requests - r.missingDeliveryId - r.deliveries.size,
      eventsWithSeveralDeliveryIds: r.severalIds,
      missingDeliveryId: r.missingDeliveryId,
      bytes: r.bytes,
      firstAt: r.firstAt,
      lastNewAt: r.lastNewAt,
      lastAt: r.lastAt,
      signaturesChecked: r.checked,
      badSignatures: r.bad,
      untracked,
      held: held.size,
      cpuMs: (cpu.user + cpu.system) / 1000,
    };
  };

  serveRequests(async (m) => {
    switch (m.type) {
      case 'listen':
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve());
        });
        return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
      case 'track': {
        const from = Number(m.from);
        const to = Number(m.to);
        if (!Number.isInteger(from) || !Number.isInteger(to) || to <= from || to - from > MAX_RANGE) throw new Error(`bad range ${from}..${to}`);
        const path = typeof m.path === 'string' ? m.path : null;
        // Ranges over the same sequence numbers must be told apart by their paths.
        const clash = (r: Range) => from < r.to && r.from < to && (r.path === null || path === null || r.path === path);
        if (ranges.some((r) => r.name === m.name || clash(r))) throw new Error(`range ${String(m.name)} overlaps another`);
        ranges.push({
          name: String(m.name),
          from,
          to,
          path,
          secret: typeof m.secret === 'string' ? m.secret : null,
          requests: 0,
          deliveries: new Map(),
          firstArrival: new Float64Array(to - from),
          distinctEvents: 0,
          severalIds: 0,
          missingDeliveryId: 0,
          bytes: 0,
          firstAt: null,
          lastNewAt: null,
          lastAt: null,
          checked: 0,
          bad: 0,
          peers: new Map(),
        });
        if (typeof m.verifyEvery === 'number' && m.verifyEvery >= 1) verifyEvery = m.verifyEvery;
        return null;
      }
      case 'mode': {
        mode = m.mode === 'hold' ? 'hold' : 'ok';
        holdMs = typeof m.holdMs === 'number' ? m.holdMs : 0;
        let released = 0;
        if (mode === 'ok') {
          for (const res of [...held.keys()]) {
            answer(res);
            released++;
          }
        }
        return { released };
      }
      case 'stats':
        return stats(String(m.name));
      case 'arrivals': {
        const r = ranges.find((x) => x.name === m.name);
        if (!r) throw new Error(`no tracked range ${String(m.name)}`);
        const upTo = typeof m.count === 'number' ? Math.min(m.count, r.firstArrival.length) : r.firstArrival.length;
        return Array.from(r.firstArrival.subarray(0, upTo), (t) => (t === 0 ? -1 : t));
      }
      case 'peers': {
        const r = ranges.find((x) => x.name === m.name);
        if (!r) throw new Error(`no tracked range ${String(m.name)}`);
        return [...r.peers];
      }
      default:
        throw new Error(`unknown request ${m.type}`);
    }
  }, 6 * 3600_000);
}

if (isEntryPoint(import.meta.url)) startReceiver();
