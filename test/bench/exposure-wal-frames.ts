/**
 * SQLite pages written a group commit of decisions' exposures (never part of the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/exposure-wal-frames.ts
 *
 * Writes bench:decide's shape of exposures (16 decisions a group, 5 zones each, one of them in a test; visitors
 * rotating over 10,000 as in bench:decide) through ExposuresRepo.insertDecisions on a fresh SQLite store: 1,250
 * groups to warm (every visitor's first arms taken), then counts the WAL frames (one a page written) of 200 groups,
 * with the automatic checkpoint off. The same with the two partial exposure indexes dropped (exposures_experiment,
 * exposures_visitor), and with the first_arm trigger dropped too: what a design whose results read first_arms
 * instead would write (docs/scale.md, "the pages a decision writes"). Bounded: 1,450 groups a variant.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { openStore } from '../../src/store/store.js';
import type { ExposureInsert } from '../../src/store/exposures.js';

for (const variant of ['as is', 'no partial indexes', 'no partial indexes, no trigger']) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'walx-'));
  const store = openStore({ dataDir });
  const db = (store.sql as unknown as { db: Database.Database }).db;
  db.pragma('wal_autocheckpoint = 0');
  if (variant !== 'as is') {
    db.exec('DROP INDEX IF EXISTS exposures_experiment; DROP INDEX IF EXISTS exposures_visitor;');
  }
  if (variant.endsWith('no trigger')) db.exec('DROP TRIGGER first_arm');
  const frames = () => Number((db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get() as { log: number }).log);
  let n = 0;
  const group = (visitorBase: number): ExposureInsert[][] =>
    Array.from({ length: 16 }, (_, d) => {
      const v = `bv-${((visitorBase + d) * 7919) % 10000}`;
      const page = (visitorBase + d) % 10;
      return Array.from({ length: 5 }, (_, z) => ({
        siteId: 'site_x', visitorId: v, profileId: null, zoneId: `zone_${page}_${z}`, variantId: `var_${page}_${z}`,
        experimentId: z === 0 ? `exp_${page}` : null, armId: z === 0 ? `arm_${page}_${(visitorBase + d) % 2}` : null, holdout: false,
        url: `https://shop.example/p${page}?utm_source=bench`, at: Date.now() + n++,
      }));
    });
  // Warm: 20,000 decisions (every visitor twice), then 200 groups measured.
  for (let g = 0; g < 1250; g++) await store.write((tx) => tx.exposures.insertDecisions(group(g * 16)));
  db.pragma('wal_checkpoint(TRUNCATE)');
  const f0 = frames();
  for (let g = 0; g < 200; g++) await store.write((tx) => tx.exposures.insertDecisions(group(20_000 + g * 16)));
  const f1 = frames();
  console.log(`${variant}: ${((f1 - f0) / 200).toFixed(1)} WAL frames a group of 16 decisions`);
  await store.close();
}
