/**
 * SQLite pages written a group commit of ingestion (never part of the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/ingest-wal-frames.ts [--group 28] [--sessions 10000] [--drop] [--pages] [--no-bare]
 *
 * bench:ingest's shape: pageviews of the bodies lib/event.ts builds, taken in turn (request n carries session and
 * visitor n mod --sessions), so its first pass over the sessions opens them (a session, an anonymous profile and the
 * visitor's identity each) and every later pass is of returning sessions. svc: the same steps as ingest-cpu.ts (the
 * body's checks, the site, recordEvent through the group-commit writer) on a fresh SQLite store; bare-store: its one
 * row into a table with svc's events columns and indexes (lib/durable-log.ts's insert, its profile_id
 * `prof_<session>`), in transactions of the same size. Waves of --group events are one group commit each (bench:ingest
 * at 64 connections measured 24–28 events a WAL fsync).
 *
 * With the automatic checkpoint off, the WAL's frames (one a page written) of each phase are read back from the
 * -wal file and each page is put to the B-tree holding it (dbstat): frames a group, split by table and index.
 * --drop: the svc run again once per index of the tables an event writes, that index dropped (a throw-away store):
 * its share measured the other way. --pages: leaf and interior pages apart. --no-bare: svc only. Bounded: 3 passes over --sessions events a run.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isUtf8 } from 'node:buffer';
import Database from 'better-sqlite3';
import { openStore } from '../../src/store/store.js';
import { SegmentMembership } from '../../src/domain/segments/membership.js';
import { IngestionService } from '../../src/domain/ingestion/service.js';
import * as schemas from '../../src/domain/ingestion/schemas.js';
import { checkJsonText } from '../../src/http/json-guard.js';
import { buildEventBodies } from './lib/event.js';
import { intFlag } from './lib/args.js';
import { svcTableSchema } from './lib/durable-log.js';

const { values } = parseArgs({
  options: {
    group: { type: 'string' },
    sessions: { type: 'string' },
    drop: { type: 'boolean', default: false },
    'no-bare': { type: 'boolean', default: false },
    pages: { type: 'boolean', default: false },
  },
});
const group = intFlag('group', values.group, 28, 1, 1000);
const sessions = intFlag('sessions', values.sessions, 10_000, group, 200_000);
const log = (s: string) => process.stdout.write(`${s}\n`);

/** Page numbers of the WAL's frames from frame `from` on (the WAL header is 32 bytes, a frame 24 + the page). */
function walPages(file: string, pageSize: number, from: number): number[] {
  const buf = readFileSync(`${file}-wal`);
  const out: number[] = [];
  for (let off = 32 + from * (24 + pageSize); off + 24 + pageSize <= buf.length; off += 24 + pageSize) out.push(buf.readUInt32BE(off));
  return out;
}

function frameCount(db: Database.Database): number {
  return Number((db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get() as { log: number }).log);
}

interface Phase {
  name: string;
  groups: number;
  frames: number;
  byTree: Map<string, number>;
}

/** Runs the passes over the sessions in waves, counting the frames of each pass and putting them to their B-trees. */
async function passes(db: Database.Database, file: string, wave: (first: number) => Promise<void>): Promise<Phase[]> {
  db.pragma('wal_autocheckpoint = 0');
  const pageSize = Number(db.pragma('page_size', { simple: true }));
  const out: Phase[] = [];
  for (const name of ['new sessions (pass 1)', 'returning (pass 2)', 'returning (pass 3)']) {
    db.pragma('wal_checkpoint(TRUNCATE)');
    const f0 = frameCount(db);
    let groups = 0;
    const start = out.length * sessions;
    for (let n = 0; n + group <= sessions; n += group, groups++) await wave(start + n);
    const pages = walPages(file, pageSize, f0);
    const owner = new Map<number, string>();
    for (const r of db.prepare('SELECT name, pageno, pagetype FROM dbstat').all() as { name: string; pageno: number; pagetype: string }[]) owner.set(r.pageno, values.pages ? `${r.name}/${r.pagetype}` : r.name);
    const byTree = new Map<string, number>();
    for (const p of pages) {
      const t = p === 1 ? 'page 1 (header, schema)' : (owner.get(p) ?? 'free');
      byTree.set(t, (byTree.get(t) ?? 0) + 1);
    }
    out.push({ name, groups, frames: frameCount(db) - f0, byTree });
  }
  return out;
}

function report(label: string, phases: Phase[]): void {
  for (const p of phases) {
    const parts = [...p.byTree].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${(n / p.groups).toFixed(1)}`);
    log(`${label}, ${p.name}: ${(p.frames / p.groups).toFixed(1)} frames a group of ${group} (${((p.frames / p.groups / group)).toFixed(2)} an event): ${parts.join(', ')}`);
  }
}

async function svc(drop?: string): Promise<Phase[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-ingest-wal-'));
  const store = openStore({ dataDir: dir, synchronous: 'full', offThreadFsync: true });
  try {
    const db = (store.sql as unknown as { db: Database.Database }).db;
    if (drop !== undefined) db.exec(`DROP INDEX ${drop}`);
    const site = await store.write((tx) => tx.sites.create({ name: 'wal' }));
    const service = new IngestionService(store, new SegmentMembership(store));
    const bodies = buildEventBodies(site.id, sessions).bodies;
    const one = async (buf: Buffer) => {
      if (!isUtf8(buf)) throw new Error('not utf8');
      const raw = buf.toString('utf8');
      const parsed: unknown = JSON.parse(raw);
      if (checkJsonText(raw)) throw new Error('json problem');
      const input = schemas.commonEvent(parsed as Record<string, unknown>) ?? schemas.eventSchema.parse(parsed);
      const s = await service.site(input.site_id);
      await service.recordEvent(input, raw, { ip: '127.0.0.1', userAgent: 'bench' }, s);
    };
    return await passes(db, db.name, async (first) => {
      const w: Promise<void>[] = [];
      for (let i = 0; i < group; i++) w.push(one(bodies[(first + i) % sessions]!));
      await Promise.all(w);
    });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function bare(): Promise<Phase[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bare-ingest-wal-'));
  const file = path.join(dir, 'events.db');
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('cache_size = -65536');
    for (const s of svcTableSchema(dir, 'events')) db.exec(s);
    const insert = db.prepare('INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id');
    const bodies = buildEventBodies('site_BENCHbareSERVER0', sessions).bodies;
    const tx = db.transaction((first: number) => {
      for (let i = 0; i < group; i++) {
        const e = JSON.parse(bodies[(first + i) % sessions]!.toString('utf8')) as Record<string, unknown>;
        const now = Date.now();
        insert.get(String(e.site_id), String(e.session_id), `prof_${String(e.session_id)}`, String(e.visitor_id), String(e.type), now, JSON.stringify(e), now);
      }
    });
    return await passes(db, file, async (first) => {
      tx.immediate(first);
    });
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

log(`${sessions} sessions, ${group} events a group commit`);
if (!values['no-bare']) report('bare-store', await bare());
report('svc', await svc());
if (values.drop) {
  for (const index of ['events_site_type', 'events_profile', 'sessions_profile', 'identities_profile', 'profiles_site']) {
    const phases = await svc(index);
    for (const p of phases) log(`svc without ${index}, ${p.name}: ${(p.frames / p.groups).toFixed(1)} frames a group`);
  }
}
