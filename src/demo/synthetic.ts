import { createHash, randomBytes } from 'node:crypto';
import type { Store } from '../store/store.js';
import { bulkTables, countAllProfiles, SEED_CACHE_KIB, withBulkSettings } from '../store/bulk-load.js';
import { AppError } from '../errors/app-error.js';
import { normalizeEmail, normalizePhoneDigits, sha256Hex } from '../domain/identity/normalize.js';

/**
 * A realistic synthetic data set for benchmarks and demos (`svc seed`):
 * profiles with traits, their identities and identity hashes, one session
 * each, events, conversions (with their co-purchase counts) and scores, on
 * either store (SQLite or PostgreSQL). This module generates the rows; the
 * store's bulk loader (src/store/bulk-load.ts) writes them: multi-row INSERTs
 * of a fixed shape, one large write operation (transaction) per batch, ids
 * whose keys mostly arrive in index order. Writes no outbox rows (seeded
 * history is not announced to webhooks) and computes no segment memberships.
 *
 * Everything random comes from one seeded generator, and every timestamp from
 * `until`, so the same seed, `until` and starting row count give the same rows.
 */

export interface SeedOptions {
  siteId: string;
  /** Currency of the site, for conversions. */
  currency: string;
  profiles: number;
  eventsPerProfile: number;
  /** Integer seed; undefined picks one at random (reported in the result). */
  seed?: number | undefined;
  /** Newest timestamp of the seeded history (ms since the epoch). */
  until: number;
  /** Profiles per transaction. */
  batch: number;
  /** Called after every committed batch. */
  onProgress?: ((p: SeedProgress) => void) | undefined;
}

export interface SeedProgress {
  profiles: number;
  total: number;
  rows: number;
  elapsedMs: number;
}

export interface SeedCounts {
  profiles: number;
  known: number;
  identities: number;
  identity_hashes: number;
  sessions: number;
  events: number;
  conversions: number;
  scores: number;
}

export interface SeedResult extends SeedCounts {
  site_id: string;
  seed: number;
  until: string;
  seconds: number;
}

/** Page cache of the seeding connection, KiB (the bulk loader's, shown by `svc seed --help`). */
export { SEED_CACHE_KIB };

/** Seeded history spans this long before `until`. */
export const SEED_SPAN_MS = 90 * 24 * 3600_000;
/** Upper bound of --profiles (phone numbers and emails are unique up to 10^9 seeded profiles per database). */
export const SEED_MAX_PROFILES = 100_000_000;

/** sfc32: a small, fast, well-distributed 32-bit generator with a 128-bit state. */
class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(key: string) {
    const h = createHash('sha256').update(key).digest();
    this.a = h.readUInt32LE(0);
    this.b = h.readUInt32LE(4);
    this.c = h.readUInt32LE(8);
    this.d = h.readUInt32LE(12) | 1;
    for (let i = 0; i < 16; i++) this.u32();
  }

  /** The generator's state, for `restore`. */
  state(): [number, number, number, number] {
    return [this.a, this.b, this.c, this.d];
  }

  restore(s: readonly [number, number, number, number]): void {
    [this.a, this.b, this.c, this.d] = s;
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }

  /** 32 random bits as 8 hex characters. */
  hex8(): string {
    return this.u32().toString(16).padStart(8, '0');
  }

  /** 64 random bits as 16 hex characters. */
  hex16(): string {
    return this.u32().toString(16).padStart(8, '0') + this.u32().toString(16).padStart(8, '0');
  }
}

/** An id shaped like newId (src/store/ids.ts): prefix, 9 base36 chars of milliseconds, 16 hex chars. */
function idAt(prefix: string, ms: number, rnd: Random): string {
  return `${prefix}_${ms.toString(36).padStart(9, '0')}${rnd.hex16()}`;
}

/**
 * 8 hex characters of whole seconds: visitor and session ids keep the shape of
 * the snippet's (`v_` + 16 hex) but start with time, so they are inserted in
 * index order, which is what makes seeding a million of them fast.
 */
function timeHex(ms: number): string {
  return Math.floor(ms / 1000).toString(16).padStart(8, '0');
}

const PLANS = ['gold', 'silver', 'free'] as const;
const COUNTRIES: readonly { code: string; dial: string; weight: number }[] = [
  { code: 'US', dial: '1', weight: 30 },
  { code: 'GB', dial: '44', weight: 14 },
  { code: 'DE', dial: '49', weight: 12 },
  { code: 'FR', dial: '33', weight: 9 },
  { code: 'CA', dial: '1', weight: 7 },
  { code: 'NL', dial: '31', weight: 6 },
  { code: 'AU', dial: '61', weight: 6 },
  { code: 'ES', dial: '34', weight: 6 },
  { code: 'IT', dial: '39', weight: 5 },
  { code: 'SE', dial: '46', weight: 5 },
];
const COUNTRY_TABLE: number[] = COUNTRIES.flatMap((c, i) => Array.from({ length: c.weight }, () => i));
const SOURCES = ['google', 'direct', 'newsletter', 'facebook', 'instagram', 'bing', 'partner'] as const;
const FIRST = [
  'Ada', 'Alan', 'Grace', 'Linus', 'Margaret', 'Dennis', 'Barbara', 'Ken', 'Frances', 'Edsger', 'Radia', 'Donald',
  'Sophie', 'Tim', 'Hedy', 'John', 'Karen', 'Guido', 'Anita', 'Bjarne', 'Joan', 'Niklaus', 'Lynn', 'James',
  'Mary', 'Leslie', 'Shafi', 'Robin', 'Carol', 'Yukihiro', 'Elena', 'Omar', 'Priya', 'Mateo', 'Chloe', 'Noah',
];
const LAST = [
  'Lovelace', 'Turing', 'Hopper', 'Torvalds', 'Hamilton', 'Ritchie', 'Liskov', 'Thompson', 'Allen', 'Dijkstra',
  'Perlman', 'Knuth', 'Wilson', 'Berners-Lee', 'Lamarr', 'Backus', 'Jones', 'van Rossum', 'Borg', 'Stroustrup',
  'Clarke', 'Wirth', 'Conway', 'Gosling', 'Keller', 'Lamport', 'Goldwasser', 'Milner', 'Shaw', 'Matsumoto',
  'Garcia', 'Haddad', 'Sharma', 'Rossi', 'Martin', 'Schmidt',
];
const EMAIL_DOMAINS = ['example.com', 'example.org', 'example.net', 'mail.example.com'] as const;
const ORIGIN = 'https://shop.example.com';
const PAGES = [
  '/', '/pricing', '/products/trail-runner-2', '/products/rain-jacket-xl', '/products/wool-socks-3pk', '/collections/new-in',
  '/collections/sale', '/blog/how-to-layer-right', '/cart', '/about',
] as const;
const TITLES: Record<string, string> = {
  '/': 'Example Shop',
  '/pricing': 'Pricing | Example Shop',
  '/products/trail-runner-2': 'Trail Runner 2 | Example Shop',
  '/products/rain-jacket-xl': 'Rain Jacket XL | Example Shop',
  '/products/wool-socks-3pk': 'Wool Socks (3 pack) | Example Shop',
  '/collections/new-in': 'New In | Example Shop',
  '/collections/sale': 'Sale | Example Shop',
  '/blog/how-to-layer-right': 'How to layer right | Example Shop',
  '/cart': 'Your cart | Example Shop',
  '/about': 'About us | Example Shop',
};
const SELECTORS = ['#cta-start-trial', '#add-to-cart', 'a.nav-sale', 'button.newsletter-signup', '#size-guide'] as const;
const SKUS: readonly { sku: string; price: number }[] = [
  { sku: 'TRAIL-RUNNER-2', price: 129.0 },
  { sku: 'RAIN-JACKET-XL', price: 189.5 },
  { sku: 'WOOL-SOCKS-3PK', price: 24.75 },
  { sku: 'TEE-RED-M', price: 19.99 },
  { sku: 'MUG-01', price: 12.0 },
  { sku: 'CAP-NAVY', price: 22.0 },
];
const AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36',
] as const;
const EVENT_TYPES = ['pageview', 'pageview', 'pageview', 'click', 'click', 'add_to_cart'] as const;

/** A 10-digit national number unique per index below 10^9 (multiplication by a unit mod 10^9 is a bijection). */
function nationalNumber(index: number): string {
  return String(2_000_000_000 + ((index % 1_000_000_000) * 3_999_997) % 1_000_000_000);
}

function formatPhone(dial: string, national: string): string {
  return `+${dial} ${national.slice(0, 3)} ${national.slice(3, 6)} ${national.slice(6)}`;
}

/**
 * The site a seed goes into (not_found unless it exists): its currency, and how
 * many segments it has (seeded profiles are not evaluated against them).
 */
export async function seedTarget(store: Store, siteId: string): Promise<{ siteId: string; currency: string; segments: number }> {
  const site = await store.sites.get(siteId);
  if (!site) throw new AppError('not_found', `no site ${siteId}`);
  return { siteId: site.id, currency: site.currency, segments: (await store.segments.list(site.id)).length };
}

/**
 * Seeds `o.profiles` profiles into a site, on SQLite or PostgreSQL. The caller
 * has checked that the site exists (seedTarget). One write operation per batch: an
 * interrupted seed leaves whole profiles (with all their rows) of the batches
 * committed so far. Runs under the store's bulk settings (withBulkSettings).
 */
export async function seedSite(store: Store, o: SeedOptions): Promise<SeedResult> {
  const started = performance.now();
  return withBulkSettings(store, () => seedWith(store, o, started));
}

async function seedWith(store: Store, o: SeedOptions, started: number): Promise<SeedResult> {
  const q = bulkTables();
  /** The sku lists of the batch's orders, in order: counted (CopurchaseRepo.record) before the batch commits. */
  let orders: string[][] = [];
  // Emails, phones and external ids are numbered from the database's profile count, and the
  // generator is keyed by it too: seeding twice (or two sites) never collides, and one seed
  // into a database without profiles always gives the same rows.
  const base = await countAllProfiles(store);
  const seed = o.seed ?? randomBytes(4).readUInt32LE(0);
  const rnd = new Random(`svc-seed:${seed}:${base}`);
  const site = o.siteId;
  const siteJson = JSON.stringify(site);
  const first = o.until - SEED_SPAN_MS;
  const window = SEED_SPAN_MS - 3600_000; // profiles start in the window; their session ends before `until`
  const counts: SeedCounts = { profiles: 0, known: 0, identities: 0, identity_hashes: 0, sessions: 0, events: 0, conversions: 0, scores: 0 };
  const rows = () => Object.values(counts).reduce((a, b) => a + b, 0) - counts.known;

  const one = (i: number) => {
    const index = base + i;
    const created = first + Math.floor((i * window) / o.profiles);
    const profileId = idAt('prf', created, rnd);
    const visitorId = `v_${timeHex(created)}${rnd.hex8()}`;
    const sessionId = `s_${timeHex(created)}${rnd.hex8()}`;
    const country = COUNTRIES[COUNTRY_TABLE[rnd.int(COUNTRY_TABLE.length)]!]!;
    const source = rnd.pick(SOURCES);
    // Traits and event bodies are built as JSON text directly (every value here is plain ASCII
    // without quotes or backslashes); the key order is the same as JSON.stringify of an object.
    let traits = `{"plan":"${PLANS[rnd.int(3)]!}","country":"${country.code}","n":"${rnd.int(1000)}","source":"${source}"`;
    const known = rnd.next() < 0.5;
    let email: string | undefined;
    let phone: string | undefined;
    let externalId: string | undefined;
    if (known) {
      const fn = rnd.pick(FIRST);
      const ln = rnd.pick(LAST);
      email = normalizeEmail(`${fn}.${ln.replace(/[^A-Za-z]/g, '')}${index}@${rnd.pick(EMAIL_DOMAINS)}`);
      externalId = `crm-${1_000_000 + index}`;
      traits += `,"email":"${email}","name":"${fn} ${ln}","external_id":"${externalId}"`;
      if (rnd.next() < 0.7) {
        phone = formatPhone(country.dial, nationalNumber(index));
        traits += `,"phone":"${phone}"`;
      }
    }
    traits += '}';

    // One session: events a few seconds to minutes apart, starting when the profile was created.
    const ip = `203.0.113.${rnd.int(254) + 1}`;
    const agent = rnd.pick(AGENTS);
    const landingPage = rnd.pick(PAGES);
    const landing = `${ORIGIN}${landingPage}?utm_source=${source}`;
    const ids = `{"site_id":${siteJson},"session_id":"${sessionId}","visitor_id":"${visitorId}"`;
    let ts = created;
    for (let e = 0; e < o.eventsPerProfile; e++) {
      if (e > 0) ts += 5_000 + rnd.int(115_000);
      const type = e === 0 ? 'pageview' : rnd.pick(EVENT_TYPES);
      let body = `${ids},"type":"${type}","timestamp":"${new Date(ts).toISOString()}"`;
      if (type === 'pageview') {
        const page = e === 0 ? landingPage : rnd.pick(PAGES);
        body += `,"url":"${e === 0 ? landing : ORIGIN + page}","title":"${TITLES[page] ?? 'Example Shop'}","referrer":"${e === 0 ? 'https://www.google.com/' : `${ORIGIN}/`}"}`;
      } else if (type === 'click') {
        body += `,"url":"${ORIGIN}${rnd.pick(PAGES)}","selector":"${rnd.pick(SELECTORS)}"}`;
      } else {
        const item = rnd.pick(SKUS);
        body += `,"sku":"${item.sku}","qty":${1 + rnd.int(3)},"price":${item.price}}`;
      }
      q.event.add(site, sessionId, profileId, visitorId, type, ts, body, ts);
      counts.events++;
    }
    const lastSeen = ts;

    // Conversions: a fifth of known profiles, a few anonymous ones.
    if (rnd.next() < (known ? 0.2 : 0.03)) {
      const at = lastSeen + 30_000;
      const items = Array.from({ length: 1 + rnd.int(3) }, () => {
        const item = rnd.pick(SKUS);
        return { sku: item.sku, qty: 1 + rnd.int(2), price: item.price };
      });
      const revenue = Math.round(items.reduce((sum, it) => sum + it.qty * it.price, 0) * 100) / 100;
      q.conversion.add(idAt('cnv', at, rnd), site, sessionId, profileId, revenue, o.currency, JSON.stringify(items), at);
      orders.push(items.map((it) => it.sku));
      counts.conversions++;
    }
    // Scores: about 30% of profiles, 0 to 100.
    if (rnd.next() < 0.3) {
      const at = created + 1_000;
      const score = rnd.int(101);
      const body = `${ids},"score":${score}}`;
      q.score.add(site, sessionId, profileId, visitorId, score, body, at);
      counts.scores++;
    }

    q.profile.add(profileId, site, known ? 1 : 0, traits, created, known ? lastSeen : created);
    q.session.add(site, sessionId, profileId, visitorId, created, lastSeen, ip, agent, landing);
    q.identity.add(site, 'visitor', visitorId, profileId, created);
    counts.profiles++;
    counts.sessions++;
    counts.identities++;
    if (known) {
      counts.known++;
      q.identity.add(site, 'email', email!, profileId, created);
      q.identity.add(site, 'external_id', externalId!, profileId, created);
      q.hash.addHash(site, 'email_sha256', sha256Hex(email!), profileId, created);
      counts.identities += 2;
      counts.identity_hashes++;
      if (phone !== undefined) {
        q.hash.addHash(site, 'phone_sha256', sha256Hex(normalizePhoneDigits(phone)), profileId, created);
        counts.identity_hashes++;
      }
    }
  };

  // One write operation (transaction) per batch: it builds the rows synchronously, profile by profile,
  // writes each table's chunks as they fill and the rest at the end, then the co-purchase counts in
  // the order of the orders. It starts from the generator state and counts the batch started with, so
  // an operation run again (a retried PostgreSQL transaction, SQLite's isolated re-run) builds and
  // writes the very same rows.
  const runBatch = async (from: number, to: number) => {
    const rndAt = rnd.state();
    const countsAt = { ...counts };
    await store.write(async (tx) => {
      rnd.restore(rndAt);
      Object.assign(counts, countsAt);
      q.clear();
      orders = [];
      for (let i = from; i < to; i++) {
        one(i);
        if (q.hasFull()) await q.writeFull(tx.sql);
      }
      await q.writeRest(tx.sql);
      for (const skus of orders) await tx.copurchase.record(site, skus);
      // The seeded profiles have no company rows: the site is indexed again when a company rule is next used.
      await tx.companies.forgetIndex(site);
    });
    orders = [];
  };
  for (let from = 0; from < o.profiles; from += o.batch) {
    await runBatch(from, Math.min(o.profiles, from + o.batch));
    o.onProgress?.({ profiles: counts.profiles, total: o.profiles, rows: rows(), elapsedMs: performance.now() - started });
  }
  return {
    site_id: site,
    seed,
    until: new Date(o.until).toISOString(),
    ...counts,
    seconds: Math.round((performance.now() - started) / 10) / 100,
  };
}
