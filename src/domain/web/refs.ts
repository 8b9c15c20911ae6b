import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';

/** The not_found error of an entity of this site. */
export const notFound = (what: string, id: string) => new AppError('not_found', `no ${what} ${id} in this site`, { id });

/** A segment id given for a variant or placement must name a segment of the site (null: anyone). */
export async function requireSegment(r: Repos, siteId: string, id: string | null): Promise<void> {
  if (id !== null && !(await r.segments.get(siteId, id))) throw new AppError('validation_failed', `segment_id: no segment ${id} in this site`, { field: 'segment_id' });
}
