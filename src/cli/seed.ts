import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { SEED_CACHE_KIB, SEED_MAX_PROFILES, SEED_SPAN_MS, seedSite, seedTarget, type SeedResult } from '../demo/synthetic.js';
import { print, usageError, withData, withStore } from './common.js';

/** Where seeded history ends when --seed is given without --until, so a seed always gives the same rows. */
const SEEDED_UNTIL = '2026-01-01T00:00:00.000Z';
/** Profiles per transaction: about 165,000 rows with 3 events each; fewer, larger commits rewrite fewer (SQLite) WAL pages. */
const DEFAULT_BATCH = 20_000;

const HELP_AFTER = `
What one profile gets:
  traits plan (gold/silver/free, about a third each), country, n (a numeric string 0-999) and source;
  about half are known, with email, name, external_id and (70% of them) phone as traits.
  identities: a visitor id for every profile; email and external_id for the known ones.
  identity hashes: email_sha256 and phone_sha256, hashed exactly as live ingestion does.
  one session and --events-per-profile events (pageview, click, add_to_cart with properties),
  conversions for about 20% of known and 3% of anonymous profiles, a score for about 30%.
  Ids look like live ones; timestamps spread over the ${SEED_SPAN_MS / 86_400_000} days before --until.

Notes:
  - Works on the embedded SQLite store and on PostgreSQL (--database-url); the same --seed gives
    the same rows on both. It commits one transaction per --batch profiles: a crash of the
    process loses only the batch in flight (every committed batch is whole).
  - On SQLite it is fast, not durable while it runs: the connection uses synchronous=OFF (and a
    ${SEED_CACHE_KIB / 1024} MiB page cache), so a crash of the machine can lose more than the batch in flight.
    On PostgreSQL every commit is as durable as the server is configured to make it.
  - It can run beside \`svc serve\`. On SQLite the server's writes wait while a batch is written
    (about two seconds with the default --batch; a lower --batch shortens the waits); on
    PostgreSQL only the server's co-purchase counts of the seeded site wait for a batch to commit.
  - No outbox rows: seeded history is not announced to webhooks.
  - Segment memberships are not computed. Segments created after seeding are backfilled by
    \`svc segment create\`; segments that already exist do not see the seeded profiles
    (delete and re-create them).
  - --seed S into a database without profiles gives the same rows every time (apart from the
    site id); without --until, seeded history then ends at ${SEEDED_UNTIL}.
    Seeding again adds more profiles without colliding with earlier ones.

Example:
  svc seed --site site_... --profiles 1000000 --seed 42`;

function intOption(flag: string, raw: string | undefined, def: number, min: number, max: number): number {
  if (raw === undefined) return def;
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw usageError(`${flag} must be a whole number from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function untilOption(raw: string | undefined, seeded: boolean): number {
  if (raw === undefined) return seeded ? Date.parse(SEEDED_UNTIL) : Date.now();
  if (raw === 'now') return Date.now();
  const t = /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(raw) : NaN;
  if (!Number.isFinite(t) || t < SEED_SPAN_MS) throw usageError(`--until must be an ISO 8601 date or date-time, or now; got ${JSON.stringify(raw)}`);
  return t;
}

const fmt = (n: number) => n.toLocaleString('en-US');

export function registerSeed(program: Command): void {
  withData(
    program
      .command('seed')
      .description(SUMMARIES.seed)
      .requiredOption('--site <id>', 'site to seed (must exist)')
      .requiredOption('--profiles <n>', `profiles to add, 1 to ${fmt(SEED_MAX_PROFILES)}`)
      .option('--events-per-profile <k>', 'events per profile, 0 to 100', '3')
      .option('--seed <s>', 'integer seed: the same seed gives the same data (default: random, printed at the end)')
      .option('--until <time>', `newest timestamp of the seeded history, ISO 8601 or now (default: now; ${SEEDED_UNTIL} with --seed)`)
      .option('--batch <b>', `profiles per transaction, 1 to 1,000,000 (default ${fmt(DEFAULT_BATCH)}: about 165,000 rows with 3 events each)`)
      .option('--json', 'print JSON: {site_id, seed, until, profiles, known, identities, identity_hashes, sessions, events, conversions, scores, seconds}'),
  )
    .addHelpText('after', HELP_AFTER)
    .action(
      async (opts: {
        site: string;
        profiles: string;
        eventsPerProfile: string;
        seed?: string;
        until?: string;
        batch?: string;
        json?: boolean;
        data?: string;
      }) => {
        const profiles = intOption('--profiles', opts.profiles, 0, 1, SEED_MAX_PROFILES);
        const eventsPerProfile = intOption('--events-per-profile', opts.eventsPerProfile, 3, 0, 100);
        const seed = opts.seed === undefined ? undefined : intOption('--seed', opts.seed, 0, 0, Number.MAX_SAFE_INTEGER);
        const batch = intOption('--batch', opts.batch, DEFAULT_BATCH, 1, 1_000_000);
        const until = untilOption(opts.until, seed !== undefined);
        let lastReport = 0;
        const out = await withStore(opts, async (s): Promise<SeedResult> => {
          const site = await seedTarget(s, opts.site);
          if (site.segments > 0) {
            process.stderr.write(
              `svc seed: note: site ${site.siteId} has ${site.segments} segment(s); seeded profiles are not evaluated against them (re-create them to backfill)\n`,
            );
          }
          return seedSite(s, {
            siteId: site.siteId,
            currency: site.currency,
            profiles,
            eventsPerProfile,
            seed,
            until,
            batch,
            onProgress: (p) => {
              if (p.profiles < p.total && p.elapsedMs - lastReport < 1000) return;
              lastReport = p.elapsedMs;
              const pct = Math.floor((p.profiles / p.total) * 100);
              const rate = p.elapsedMs > 0 ? Math.round(p.profiles / (p.elapsedMs / 1000)) : 0;
              process.stderr.write(
                `svc seed: ${fmt(p.profiles)}/${fmt(p.total)} profiles (${pct}%), ${fmt(p.rows)} rows, ${(p.elapsedMs / 1000).toFixed(1)} s, ${fmt(rate)} profiles/s\n`,
              );
            },
          });
        });
        print(opts.json, out, () =>
          `seeded ${fmt(out.profiles)} profiles (${fmt(out.known)} known), ${fmt(out.identities)} identities, ${fmt(out.identity_hashes)} identity hashes, ` +
          `${fmt(out.sessions)} sessions, ${fmt(out.events)} events, ${fmt(out.conversions)} conversions, ${fmt(out.scores)} scores ` +
          `into ${out.site_id} in ${out.seconds.toFixed(1)} s (seed ${out.seed}, until ${out.until})`,
        );
      },
    );
}
