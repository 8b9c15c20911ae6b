import type { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import { decisionService, type DecisionResult } from './decisions.js';
import { explainOut, previewOut, type decisionExplainView, type decisionPreviewView } from './decision-views.js';

/** Whom a preview decides for: a visitor id, or a profile (its most recent visitor id). */
export type PreviewSubject = { visitorId: string } | { profileId: string };

async function decideFor(store: Store, siteId: string, who: PreviewSubject, url: string): Promise<DecisionResult> {
  let visitorId: string | undefined;
  if ('profileId' in who) {
    visitorId = (await store.visitors.idsOfProfile(siteId, who.profileId))[0];
    if (visitorId === undefined) throw new AppError('validation_failed', `profile ${who.profileId} has no visitor id; pass visitor_id`, { field: 'profile' });
  } else visitorId = who.visitorId;
  const r = await decisionService(store).preview(siteId, visitorId, url);
  if (!r) throw new AppError('validation_failed', 'url: an absolute http(s) URL or a path starting with "/"', { field: 'url' });
  return r;
}

/** What every zone of every page matching the URL shows the visitor, as the browser tag would get it; records no exposure. */
export async function previewForVisitor(store: Store, siteId: string, who: PreviewSubject, url: string): Promise<z.input<typeof decisionPreviewView>> {
  return previewOut(await decideFor(store, siteId, who, url));
}

/** The same decision with each zone's reason chain; records no exposure. */
export async function explainForVisitor(store: Store, siteId: string, who: PreviewSubject, url: string): Promise<z.input<typeof decisionExplainView>> {
  return explainOut(await decideFor(store, siteId, who, url));
}
