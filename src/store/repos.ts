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
  enqueued: Enqueued;
  /** Set by an erasure: the store then clears what the deleted rows left in its files (Store.write). */
  erasures: { pending: boolean };
  /** The sessions and event triggers the ingestion hot path reads, cached by the SQLite writer (see WriterCaches). */
  writerCaches: WriterCaches;
  /** Keys revoked by this process (see KeysRepo, PresentedKeys). */
  keyChanges: KeyChanges;
  /** PostgreSQL: event row ids reserved ahead (pg/event-ids.ts), so an event and its outbox row share a statement wave; null on SQLite. */
  eventIds: { take(): Promise<number>; takeNow(): number | undefined } | null;
}

/** Rows of work written: outbox rows, ad-platform jobs, trigger fires, webhook deliveries. */
export interface Enqueued {
  outbox: number;
  adJobs: number;
  fires: number;
  deliveries: number;
}

export function newEnqueued(): Enqueued {
  return { outbox: 0, adJobs: 0, fires: 0, deliveries: 0 };
}

export function enqueuedTotal(e: Enqueued): number {
  return e.outbox + e.adJobs + e.fires + e.deliveries;
}

/** Adds what one transaction enqueued to the store's counters, once it has committed. */
export function addEnqueued(into: Enqueued, from: Enqueued): void {
  into.outbox += from.outbox;
  into.adJobs += from.adJobs;
  into.fires += from.fires;
  into.deliveries += from.deliveries;
}

export function newRepoShared(): RepoShared {
  return { sites: new Map(), enqueued: newEnqueued(), erasures: { pending: false }, writerCaches: new WriterCaches(), keyChanges: { version: 0 }, eventIds: null };
}

/**
 * Every repository, bound to one executor: the store's own (reads, and on
 * SQLite everything) or the connection of one transaction (the `tx` a write
 * operation receives). Each is built on first use: a PostgreSQL group commit
 * makes a Repos per transaction, and an ingestion group uses four of the
 * thirty-nine (each built at most once per Repos all the same, so the
 * per-transaction state of some, such as the shared asks of WebhooksRepo and
 * TriggersRepo, stays per transaction).
 */
export class Repos {
  /**
   * `enqueued`: where this set counts the work rows it writes. The store's counters by default (SQLite: one
   * writer, so an operation's rows are committed, or visible to the next operation on the same connection,
   * before any worker reads the counters again). A PostgreSQL transaction counts its own and the writer adds
   * them to the store's after its COMMIT: counted while it ran, a worker that read the counters and then looked
   * for rows (on another connection, before that COMMIT) took them as seen, and the commit woke nobody.
   */
  constructor(
    readonly sql: Sql,
    readonly shared: RepoShared,
    private readonly enqueued: Enqueued = shared.enqueued,
  ) {}

  private _sites?: SitesRepo;
  get sites(): SitesRepo {
    return (this._sites ??= new SitesRepo(this.sql, this.shared.sites));
  }

  private _profiles?: ProfilesRepo;
  get profiles(): ProfilesRepo {
    return (this._profiles ??= new ProfilesRepo(this.sql, this.shared.writerCaches));
  }

  private _activity?: ActivityRepo;
  get activity(): ActivityRepo {
    return (this._activity ??= new ActivityRepo(this.sql, this.enqueued, this.shared.eventIds));
  }

  private _webhooks?: WebhooksRepo;
  get webhooks(): WebhooksRepo {
    return (this._webhooks ??= new WebhooksRepo(this.sql, this.enqueued, this.shared.writerCaches));
  }

  private _keys?: KeysRepo;
  get keys(): KeysRepo {
    return (this._keys ??= new KeysRepo(this.sql, this.shared.keyChanges));
  }

  private _profileRead?: ProfileReadRepo;
  get profileRead(): ProfileReadRepo {
    return (this._profileRead ??= new ProfileReadRepo(this.sql));
  }

  private _segments?: SegmentsRepo;
  get segments(): SegmentsRepo {
    return (this._segments ??= new SegmentsRepo(this.sql));
  }

  private _tokens?: TokensRepo;
  get tokens(): TokensRepo {
    return (this._tokens ??= new TokensRepo(this.sql));
  }

  private _audit?: AuditRepo;
  get audit(): AuditRepo {
    return (this._audit ??= new AuditRepo(this.sql));
  }

  private _users?: UsersRepo;
  get users(): UsersRepo {
    return (this._users ??= new UsersRepo(this.sql));
  }

  private _insights?: InsightsRepo;
  get insights(): InsightsRepo {
    return (this._insights ??= new InsightsRepo(this.sql));
  }

  private _privacy?: PrivacyRepo;
  get privacy(): PrivacyRepo {
    return (this._privacy ??= new PrivacyRepo(this.sql, this.shared.erasures, this.shared.writerCaches));
  }

  private _adplatforms?: AdPlatformsRepo;
  get adplatforms(): AdPlatformsRepo {
    return (this._adplatforms ??= new AdPlatformsRepo(this.sql, this.enqueued));
  }

  private _copurchase?: CopurchaseRepo;
  get copurchase(): CopurchaseRepo {
    return (this._copurchase ??= new CopurchaseRepo(this.sql));
  }

  private _counts?: StatsRepo;
  get counts(): StatsRepo {
    return (this._counts ??= new StatsRepo(this.sql));
  }

  private _leases?: LeasesRepo;
  get leases(): LeasesRepo {
    return (this._leases ??= new LeasesRepo(this.sql));
  }

  private _retention?: RetentionRepo;
  get retention(): RetentionRepo {
    return (this._retention ??= new RetentionRepo(this.sql));
  }

  private _generation?: GenerationRepo;
  get generation(): GenerationRepo {
    return (this._generation ??= new GenerationRepo(this.sql));
  }

  private _crawl?: CrawlRepo;
  get crawl(): CrawlRepo {
    return (this._crawl ??= new CrawlRepo(this.sql));
  }

  private _stall?: StallRepo;
  get stall(): StallRepo {
    return (this._stall ??= new StallRepo(this.sql));
  }

  private _leads?: LeadsRepo;
  get leads(): LeadsRepo {
    return (this._leads ??= new LeadsRepo(this.sql));
  }

  private _triggers?: TriggersRepo;
  get triggers(): TriggersRepo {
    return (this._triggers ??= new TriggersRepo(this.sql, this.enqueued, this.shared.writerCaches));
  }

  private _companies?: CompaniesRepo;
  get companies(): CompaniesRepo {
    return (this._companies ??= new CompaniesRepo(this.sql));
  }

  private _lift?: LiftRepo;
  get lift(): LiftRepo {
    return (this._lift ??= new LiftRepo(this.sql));
  }

  private _experiments?: ExperimentsRepo;
  get experiments(): ExperimentsRepo {
    return (this._experiments ??= new ExperimentsRepo(this.sql));
  }

  private _pages?: PagesRepo;
  get pages(): PagesRepo {
    return (this._pages ??= new PagesRepo(this.sql));
  }

  private _zones?: ZonesRepo;
  get zones(): ZonesRepo {
    return (this._zones ??= new ZonesRepo(this.sql));
  }

  private _content?: ContentRepo;
  get content(): ContentRepo {
    return (this._content ??= new ContentRepo(this.sql));
  }

  private _variants?: VariantsRepo;
  get variants(): VariantsRepo {
    return (this._variants ??= new VariantsRepo(this.sql));
  }

  private _placements?: PlacementsRepo;
  get placements(): PlacementsRepo {
    return (this._placements ??= new PlacementsRepo(this.sql));
  }

  private _overrides?: OverridesRepo;
  get overrides(): OverridesRepo {
    return (this._overrides ??= new OverridesRepo(this.sql));
  }

  private _experimentRefs?: ExperimentRefsRepo;
  get experimentRefs(): ExperimentRefsRepo {
    return (this._experimentRefs ??= new ExperimentRefsRepo(this.sql));
  }

  private _exposures?: ExposuresRepo;
  get exposures(): ExposuresRepo {
    return (this._exposures ??= new ExposuresRepo(this.sql));
  }

  private _visitors?: VisitorsRepo;
  get visitors(): VisitorsRepo {
    return (this._visitors ??= new VisitorsRepo(this.sql));
  }

  private _renders?: RendersRepo;
  get renders(): RendersRepo {
    return (this._renders ??= new RendersRepo(this.sql));
  }

  private _webConfig?: WebConfigRepo;
  get webConfig(): WebConfigRepo {
    return (this._webConfig ??= new WebConfigRepo(this.sql));
  }

  private _campaigns?: CampaignsRepo;
  get campaigns(): CampaignsRepo {
    return (this._campaigns ??= new CampaignsRepo(this.sql));
  }

  private _drafts?: DraftsRepo;
  get drafts(): DraftsRepo {
    return (this._drafts ??= new DraftsRepo(this.sql));
  }

  private _idempotency?: IdempotencyRepo;
  get idempotency(): IdempotencyRepo {
    return (this._idempotency ??= new IdempotencyRepo(this.sql));
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
