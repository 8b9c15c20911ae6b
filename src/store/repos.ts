import type { Sql } from './sql.js';
import { SitesRepo, type SiteCache } from './sites.js';
import { ProfilesRepo } from './profiles.js';
import { WriterCaches } from './writer-caches.js';
import { ActivityRepo } from './activity.js';
import { WebhooksRepo } from './webhooks.js';
import { KeysRepo, type KeyChanges } from './keys.js';
import { ProfileReadRepo } from './profile-read.js';
import { SegmentsRepo } from './segments.js';
import { TokensRepo } from './tokens.js';
import { AuditRepo } from './audit.js';
import { UsersRepo } from './users.js';
import { InsightsRepo } from './insights.js';
import { PrivacyRepo } from './privacy.js';
import { AdPlatformsRepo } from './adplatforms.js';
import { CopurchaseRepo } from './copurchase.js';
import { StatsRepo } from './stats.js';
import { LeasesRepo } from './leases.js';
import { RetentionRepo } from './retention.js';
import { GenerationRepo } from './generation.js';
import { CrawlRepo } from './crawl.js';
import { StallRepo } from './stall.js';
import { LeadsRepo } from './leads.js';
import { TriggersRepo } from './triggers.js';
import { CompaniesRepo } from './companies.js';
import { LiftRepo } from './lift.js';
import { ExperimentsRepo } from './experiments.js';
import { PagesRepo } from './pages.js';
import { ZonesRepo } from './zones.js';
import { ContentRepo } from './content.js';
import { VariantsRepo } from './variants.js';
import { PlacementsRepo } from './placements.js';
import { OverridesRepo } from './overrides.js';
import { ExperimentRefsRepo } from './experiment-refs.js';
import { ExposuresRepo } from './exposures.js';
import { VisitorsRepo } from './visitors.js';
import { RendersRepo } from './renders.js';
import { WebConfigRepo } from './web-config.js';
import { CampaignsRepo } from './campaigns.js';
import { DraftsRepo } from './drafts.js';
import { IdempotencyRepo } from './idempotency.js';

/**
 * What the repositories of one store share whichever connection they run on:
 * caches, and counters the workers read after a commit to know whether there
 * is new work (rows written by this process).
 */
export interface RepoShared {
  sites: SiteCache;
  /** Deliveries: webhook deliveries created or put back in the queue (the instance holding their lane must hear of them). */
  enqueued: { outbox: number; adJobs: number; fires: number; deliveries: number };
  /** Set by an erasure: the store then clears what the deleted rows left in its files (Store.write). */
  erasures: { pending: boolean };
  /** The sessions and event triggers the ingestion hot path reads, cached by the SQLite writer (see WriterCaches). */
  writerCaches: WriterCaches;
  /** Keys revoked by this process (see KeysRepo, PresentedKeys). */
  keyChanges: KeyChanges;
  /** PostgreSQL: event row ids reserved ahead (pg/event-ids.ts), so an event and its outbox row share a statement wave; null on SQLite. */
  eventIds: { take(): Promise<number>; takeNow(): number | undefined } | null;
}

export function newRepoShared(): RepoShared {
  return { sites: new Map(), enqueued: { outbox: 0, adJobs: 0, fires: 0, deliveries: 0 }, erasures: { pending: false }, writerCaches: new WriterCaches(), keyChanges: { version: 0 }, eventIds: null };
}

/**
 * Every repository, bound to one executor: the store's own (reads, and on
 * SQLite everything) or the connection of one transaction (the `tx` a write
 * operation receives). Repositories hold no state of their own beyond `shared`,
 * so binding a set to a transaction is cheap.
 */
export class Repos {
  readonly sites: SitesRepo;
  readonly profiles: ProfilesRepo;
  readonly activity: ActivityRepo;
  readonly webhooks: WebhooksRepo;
  readonly keys: KeysRepo;
  readonly profileRead: ProfileReadRepo;
  readonly segments: SegmentsRepo;
  readonly tokens: TokensRepo;
  readonly audit: AuditRepo;
  readonly users: UsersRepo;
  readonly insights: InsightsRepo;
  readonly privacy: PrivacyRepo;
  readonly adplatforms: AdPlatformsRepo;
  readonly copurchase: CopurchaseRepo;
  readonly counts: StatsRepo;
  readonly leases: LeasesRepo;
  readonly retention: RetentionRepo;
  readonly generation: GenerationRepo;
  readonly crawl: CrawlRepo;
  readonly stall: StallRepo;
  readonly leads: LeadsRepo;
  readonly triggers: TriggersRepo;
  readonly companies: CompaniesRepo;
  readonly lift: LiftRepo;
  readonly experiments: ExperimentsRepo;
  readonly pages: PagesRepo;
  readonly zones: ZonesRepo;
  readonly content: ContentRepo;
  readonly variants: VariantsRepo;
  readonly placements: PlacementsRepo;
  readonly overrides: OverridesRepo;
  readonly experimentRefs: ExperimentRefsRepo;
  readonly exposures: ExposuresRepo;
  readonly visitors: VisitorsRepo;
  readonly renders: RendersRepo;
  readonly webConfig: WebConfigRepo;
  readonly campaigns: CampaignsRepo;
  readonly drafts: DraftsRepo;
  readonly idempotency: IdempotencyRepo;

  constructor(
    readonly sql: Sql,
    readonly shared: RepoShared,
  ) {
    this.sites = new SitesRepo(sql, shared.sites);
    this.profiles = new ProfilesRepo(sql, shared.writerCaches);
    this.activity = new ActivityRepo(sql, shared.enqueued, shared.eventIds);
    this.webhooks = new WebhooksRepo(sql, shared.enqueued, shared.writerCaches);
    this.keys = new KeysRepo(sql, shared.keyChanges);
    this.profileRead = new ProfileReadRepo(sql);
    this.segments = new SegmentsRepo(sql);
    this.tokens = new TokensRepo(sql);
    this.audit = new AuditRepo(sql);
    this.users = new UsersRepo(sql);
    this.insights = new InsightsRepo(sql);
    this.privacy = new PrivacyRepo(sql, shared.erasures, shared.writerCaches);
    this.adplatforms = new AdPlatformsRepo(sql, shared.enqueued);
    this.copurchase = new CopurchaseRepo(sql);
    this.counts = new StatsRepo(sql);
    this.leases = new LeasesRepo(sql);
    this.retention = new RetentionRepo(sql);
    this.generation = new GenerationRepo(sql);
    this.crawl = new CrawlRepo(sql);
    this.stall = new StallRepo(sql);
    this.leads = new LeadsRepo(sql);
    this.triggers = new TriggersRepo(sql, shared.enqueued, shared.writerCaches);
    this.companies = new CompaniesRepo(sql);
    this.lift = new LiftRepo(sql);
    this.experiments = new ExperimentsRepo(sql);
    this.pages = new PagesRepo(sql);
    this.zones = new ZonesRepo(sql);
    this.content = new ContentRepo(sql);
    this.variants = new VariantsRepo(sql);
    this.placements = new PlacementsRepo(sql);
    this.overrides = new OverridesRepo(sql);
    this.experimentRefs = new ExperimentRefsRepo(sql);
    this.exposures = new ExposuresRepo(sql);
    this.visitors = new VisitorsRepo(sql);
    this.renders = new RendersRepo(sql);
    this.webConfig = new WebConfigRepo(sql);
    this.campaigns = new CampaignsRepo(sql);
    this.drafts = new DraftsRepo(sql);
    this.idempotency = new IdempotencyRepo(sql);
  }
}

/** A write operation: runs inside one transaction and must do every read and write through `tx`. */
export type WriteOp<T> = (tx: Repos) => Promise<T> | T;

/**
 * How a write operation may be grouped. `key` names what the operation
 * concerns (an ingestion request's site and session): on PostgreSQL, keyed
 * operations of one group commit run concurrently, operations with the same
 * key one after another in submission order, and their statements are sent
 * set-based (one statement per SQL text and wave, see pg/batch.ts). Statements
 * a keyed operation asks together (without awaiting one before asking the next)
 * must be independent: on PostgreSQL they may go as one statement, in which
 * none sees another's writes. Operations without a key run one after another.
 * SQLite ignores it (its operations never wait for I/O).
 */
export interface WriteOptions {
  key?: string | undefined;
  /**
   * When the operation's promise settles. `durable` (the default): once its
   * transaction has committed and reached the disk. `commit`: once it has
   * committed, without waiting for the disk: on SQLite with the WAL fsynced off
   * the event loop (`svc serve`), the rows are then readable and survive the
   * process being killed (they are in the WAL, in the OS page cache), and the
   * fsync that follows makes them survive a power loss; PostgreSQL's commit is
   * already durable (`synchronous_commit` on), so there it changes nothing.
   * For writes whose caller does not need the disk before it answers (exposures).
   */
  ack?: 'durable' | 'commit' | undefined;
  /**
   * The operation sends exactly one statement, whose rows need no transaction
   * around them (an append: exposures). PostgreSQL runs such operations apart
   * from the group transactions: those queued in one turn of the event loop
   * share one statement per SQL text (pg/batch.ts), each committed on its own,
   * without BEGIN and COMMIT round trips; a second statement from the operation
   * is refused (it would not be atomic with the first). SQLite ignores it: its
   * group transaction costs no round trip.
   */
  oneStatement?: boolean | undefined;
  /**
   * SQLite: `fn` is `merge.by(tx, [merge.item])`, and in a group's first (optimistic) pass consecutive operations
   * with the same `merge.by` run as ONE call of it with their items in submission order (a lone operation as a call
   * with its one item) (the exposures of many
   * decisions as one statement: the per-statement costs and SQLite's statement journal paid once a group).
   * When that call fails, the group is rolled back and run again with every operation alone in its own
   * savepoint (its own `fn`), as for any failure, so only the faulty operation fails. A merged operation
   * resolves with undefined. PostgreSQL ignores it (it runs `fn`; oneStatement does the grouping there).
   */
  merge?: WriteMerge | undefined;
}

/** WriteOptions.merge: the item of one operation, and what writes the items of consecutive operations at once. */
export interface WriteMerge<I = unknown> {
  /** A function kept for good (operations merge when theirs is the same): writes `items`, in order, through `tx`. */
  by(tx: Repos, items: readonly I[]): Promise<void> | void;
  item: I;
}
