/**
 * Bodies of the webhook delivery benchmark. Every event carries a sequence
 * number in a custom property (`bseq`, 9 digits, fixed width): svc copies an
 * event's custom properties verbatim into the webhook payload, so the
 * receiver can tell which ingested event a delivery belongs to and the
 * orchestrator can compute acknowledged-to-delivered latency per event.
 *
 * `pageviewBody` is what the load generator POSTs to /api/events (the shape
 * of lib/event.ts plus `bseq`); `deliveryLikeBody` is a payload of the shape
 * svc delivers for that event (see behaviouralPayload in
 * src/domain/ingestion/payloads.ts), used by the bare undici baseline so both
 * send bodies of about the same size.
 */
import { PAGES, REFERRERS, VIEWPORTS } from './event.js';

export const SEQ_KEY = 'bseq';
export const SEQ_DIGITS = 9;
const MAX_SEQ = 10 ** SEQ_DIGITS - 1;
const SEQ_MARKER = Buffer.from(`"${SEQ_KEY}":"`);

function seqText(seq: number): string {
  if (!Number.isInteger(seq) || seq < 0 || seq > MAX_SEQ) throw new Error(`sequence number out of range: ${seq}`);
  return String(seq).padStart(SEQ_DIGITS, '0');
}

/** The custom properties of event `seq` (what the site sends besides the known keys). */
function properties(seq: number, sessions: number) {
  const i = seq % sessions;
  const [path, title] = PAGES[i % PAGES.length]!;
  const [w, h] = VIEWPORTS[(i >> 2) % VIEWPORTS.length]!;
  return {
    url: `https://shop.example.com${path}?utm_source=newsletter`,
    referrer: REFERRERS[(i >> 4) % REFERRERS.length],
    title,
    viewport: { w, h },
    props: { ab: i % 2 ? 'B' : 'A' },
    [SEQ_KEY]: seqText(seq),
  };
}

function sessionOf(seq: number, sessions: number): { session: string; visitor: string } {
  const n = String(seq % sessions).padStart(6, '0');
  return { session: `sess_${n}`, visitor: `vis_${n}` };
}

/** The /api/events body of event `seq`: a pageview of one of `sessions` sessions. */
export function pageviewBody(siteId: string, seq: number, sessions: number): Buffer {
  const { session, visitor } = sessionOf(seq, sessions);
  return Buffer.from(
    JSON.stringify({ site_id: siteId, session_id: session, visitor_id: visitor, type: 'pageview', ...properties(seq, sessions) }),
  );
}

/** A payload shaped like the pageview webhook svc delivers for event `seq` (ids of svc's widths). */
export function deliveryLikeBody(siteId: string, seq: number, sessions: number): Buffer {
  const { session, visitor } = sessionOf(seq, sessions);
  return Buffer.from(
    JSON.stringify({
      event: 'pageview',
      site_id: siteId,
      event_id: `evt_${seq}`,
      profile_id: `prf_${'0'.repeat(9)}${seqText(seq).padStart(16, '0')}`,
      session_id: session,
      visitor_id: visitor,
      timestamp: new Date().toISOString(),
      properties: properties(seq, sessions),
    }),
  );
}

/** The sequence number a body carries, or -1 when it carries none. */
export function seqOf(body: Buffer): number {
  const at = body.indexOf(SEQ_MARKER);
  if (at === -1) return -1;
  const start = at + SEQ_MARKER.length;
  let n = 0;
  for (let i = start; i < start + SEQ_DIGITS; i++) {
    const c = body[i];
    if (c === undefined || c < 0x30 || c > 0x39) return -1;
    n = n * 10 + (c - 0x30);
  }
  return n;
}
