import { closeSync, openSync } from 'node:fs';
import { databasePath, openDatabase, type Db, type SyncMode } from './db.js';
import { GroupCommitWriter } from './writer.js';
import { SitesRepo } from './sites.js';
import { ProfilesRepo } from './profiles.js';
import { ActivityRepo } from './activity.js';
import { siteStats, type SiteStats } from './stats.js';
import { WebhooksRepo } from './webhooks.js';
import { SecretBox } from './secret-box.js';
import { KeysRepo } from './keys.js';
import { ProfileReadRepo } from './profile-read.js';
import { SegmentsRepo } from './segments.js';
import { TokensRepo } from './tokens.js';
import { AuditRepo } from './audit.js';
import { UsersRepo } from './users.js';
import { InsightsRepo } from './insights.js';
import { PrivacyRepo } from './privacy.js';
import { AdPlatformsRepo } from './adplatforms.js';
import { CopurchaseRepo } from './copurchase.js';

/** The data of one svc installation: the database, its group-commit writer and the repositories. */
export class Store {
  readonly writer: GroupCommitWriter;
  readonly sites: SitesRepo;
  readonly profiles: ProfilesRepo;
  readonly activity: ActivityRepo;
  readonly webhooks: WebhooksRepo;
  readonly secrets: SecretBox;
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

  constructor(
    readonly db: Db,
    readonly dataDir: string,
    private readonly walFd: number | null = null,
  ) {
    this.writer = new GroupCommitWriter(db, 1000, walFd);
    this.sites = new SitesRepo(db);
    this.profiles = new ProfilesRepo(db);
    this.activity = new ActivityRepo(db);
    this.webhooks = new WebhooksRepo(db);
    this.secrets = SecretBox.forDataDir(dataDir);
    this.keys = new KeysRepo(db);
    this.profileRead = new ProfileReadRepo(db);
    this.segments = new SegmentsRepo(db);
    this.tokens = new TokensRepo(db);
    this.audit = new AuditRepo(db);
    this.users = new UsersRepo(db);
    this.insights = new InsightsRepo(db);
    this.privacy = new PrivacyRepo(db);
    this.adplatforms = new AdPlatformsRepo(db);
    this.copurchase = new CopurchaseRepo(db);
  }

  /** Runs `fn` in the next group-commit transaction; resolves after commit. */
  write<T>(fn: () => T): Promise<T> {
    return this.writer.run(fn);
  }

  stats(siteId?: string): SiteStats[] {
    return siteStats(this.db, siteId);
  }

  /** Flushes pending writes (waiting for their fsync), checkpoints the WAL and closes the database. */
  async close(): Promise<void> {
    await this.writer.close();
    if (this.walFd !== null) closeSync(this.walFd);
    if (this.db.open) {
      try {
        this.db.pragma('wal_checkpoint(TRUNCATE)');
      } catch {
        // another process may hold the database; the WAL stays valid
      }
      this.db.close();
    }
  }
}

/**
 * Opens the store of a data directory. `offThreadFsync` (for the long-running
 * server) keeps fsync off the event loop when synchronous is `full`.
 */
export function openStore(opts: { dataDir: string; synchronous?: SyncMode; offThreadFsync?: boolean }): Store {
  const db = openDatabase(opts);
  const asyncFsync = opts.offThreadFsync === true && (opts.synchronous ?? 'full') === 'full';
  const walFd = asyncFsync ? openSync(`${databasePath(opts.dataDir)}-wal`, 'r') : null;
  return new Store(db, opts.dataDir, walFd);
}
