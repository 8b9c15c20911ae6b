import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import { decisionService } from './decisions.js';

/** Runs a change of a site's web experience in one write operation, then drops the site's cached decision snapshot. */
export async function changeWeb<T>(store: Store, siteId: string, fn: (tx: Repos, now: number) => Promise<T>): Promise<T> {
  const out = await store.write((tx) => fn(tx, Date.now()));
  decisionService(store).invalidate(siteId);
  return out;
}
