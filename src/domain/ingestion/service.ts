import { AppError } from '../../errors/app-error.js';
import { WriteConflict } from '../../store/errors.js';
import { newId } from '../../store/ids.js';
import type { Store } from '../../store/store.js';
import type { Repos, WriteOp } from '../../store/repos.js';
import { IDEMPOTENCY_WINDOW_MS } from '../../store/idempotency.js';
import type { SessionContext } from '../../store/profiles.js';
import type { SiteRow } from '../../store/sites.js';
import type { SegmentMembership } from '../segments/membership.js';
import { normalizeEmail, normalizePhoneDigits, sha256Hex } from '../identity/normalize.js';
import { planIdentify } from '../identity/plan.js';
import { clickIdsFromUrl } from './click-ids.js';
import { eventId as publicEventId, scoreId } from './ids.js';
import { recordWebVitals, webVitalsOf } from '../experiments/vitals.js';
import { captureSignals } from './ad-signals.js';
import * as triggers from '../triggers/service.js';
import {
  BEHAVIOURAL_WEBHOOK_TYPES,
  behaviouralPayload,
  conversionPayload,
  leadCapturedPayload,
  profileIdentifiedPayload,
  type LineItem,
} from './payloads.js';
import { parseVariantRender, recordVariantRender } from '../web/watchdog.js';
import type { ConvertRequest, EventRequest, IdentifyRequest, LeadRequest, ScoreRequest } from './schemas.js';

export interface RequestContext {
  ip?: string | undefined;
  userAgent?: string | undefined;
  /** The request's idempotency key (Idempotency-Key header or the body's idempotency_key), its path and success status. */
  idempotency?: { key: string; path: string; status: number } | undefined;
  /** Set by the service when the answer is the one first given for the idempotency key (nothing new was stored). */
  replayed?: boolean;
}

export interface IdentifyResult {
  profile_id: string;
  known: boolean;
  identified: boolean;
  merged_profiles: number;
}

interface IdentifyCoreInput {
  siteId: string;
  sessionId?: string | undefined;
  visitorId?: string | undefined;
  traits: Record<string, string>;
}

const EVENT_KEYS = new Set(['site_id', 'session_id', 'visitor_id', 'type', 'timestamp', 'idempotency_key']);

/**
 * The operations behind the ingestion endpoints. Each validates the site,
 * then runs as one operation of the next group commit: the data and the
 * outbox rows it causes are committed together, and the returned promise
 * resolves only after that commit.
 */
export class IngestionService {
  constructor(
    private readonly store: Store,
    private readonly membership: SegmentMembership,
  ) {}

  async site(siteId: string): Promise<SiteRow> {
    const site = await this.store.sites.get(siteId);
    if (!site) {
      throw new AppError('unknown_site', `site_id: no site ${JSON.stringify(siteId)}`, { field: 'site_id' });
    }
    return site;
  }

  async identify(req: IdentifyRequest, ctx: RequestContext): Promise<IdentifyResult> {
    await this.site(req.site_id);
    return this.write(req.site_id, ctx, async (tx) => {
      const now = Date.now();
      const r = await this.identifyCore(
        tx,
        { siteId: req.site_id, sessionId: req.session_id, visitorId: req.visitor_id, traits: req.traits },
        ctx,
        now,
      );
      await this.membership.recompute(tx, req.site_id, r.profile_id, now, { identity: true });
      return r;
    }, { session: req.session_id, visitor: req.visitor_id });
  }

  async convert(req: ConvertRequest, ctx: RequestContext): Promise<{ conversion_id: string; profile_id: string }> {
    const site = await this.site(req.site_id);
    const lineItems: LineItem[] = (req.line_items ?? []).map((i) => ({ sku: i.sku, qty: i.qty, price: i.price }));
    return this.write(site.id, ctx, async (tx) => {
      const now = Date.now();
      const s = await tx.profiles.ensureSession(site.id, req.session_id, undefined, sessionCtx(ctx), now);
      const id = newId('cnv');
      await tx.activity.insertConversion({
        id,
        siteId: site.id,
        sessionId: req.session_id,
        profileId: s.profileId,
        revenue: req.revenue,
        currency: site.currency,
        lineItems: JSON.stringify(lineItems),
        now,
      });
      await tx.copurchase.record(site.id, lineItems.map((i) => i.sku));
      await tx.activity.enqueue(
        site.id,
        'conversion',
        conversionPayload({
          siteId: site.id,
          conversionId: id,
          profileId: s.profileId,
          sessionId: req.session_id,
          visitorId: s.visitorId,
          revenue: req.revenue,
          currency: site.currency,
          lineItems,
          at: now,
        }),
        now,
      );
      const connections = await tx.adplatforms.enabledIds(site.id);
      if (connections.length > 0) {
        // One ad-platform job per connection, in this transaction: a conversion is never recorded without them.
        const payload = JSON.stringify(
          await captureSignals(tx, {
            siteId: site.id,
            sessionId: req.session_id,
            profileId: s.profileId,
            conversionId: id,
            revenue: req.revenue,
            currency: site.currency,
            lineItems,
            at: now,
          }),
        );
        for (const connectionId of connections) {
          await tx.adplatforms.insertJob({ siteId: site.id, connectionId, conversionId: id, payload, now });
        }
      }
      await this.membership.recompute(tx, site.id, s.profileId, now);
      return { conversion_id: id, profile_id: s.profileId };
    }, { session: req.session_id });
  }

  async captureLead(
    req: LeadRequest,
    ctx: RequestContext,
  ): Promise<{ lead_id: string; profile_id: string; form_id: string; kind: 'lead_form' | 'optin'; workable: boolean }> {
    await this.site(req.site_id);
    const clean = (v: string | null | undefined) => {
      const t = v?.trim();
      return t ? t : undefined;
    };
    const email = clean(req.email);
    const name = clean(req.name);
    const phone = clean(req.phone);
    const kind = req.source === 'optin_form' ? ('optin' as const) : ('lead_form' as const);
    const formId = req.form_id ?? (kind === 'optin' ? 'optin_form' : 'lead_form');
    const workable = email !== undefined || name !== undefined || phone !== undefined;
    const traits: Record<string, string> = {};
    if (email !== undefined) traits.email = email;
    if (name !== undefined) traits.name = name;
    if (phone !== undefined) traits.phone = phone;
    return this.write(req.site_id, ctx, async (tx) => {
      const now = Date.now();
      const sessionId = req.session_id ?? undefined;
      const visitorId = req.visitor_id ?? undefined;
      let profileId: string;
      if (sessionId !== undefined || visitorId !== undefined || Object.keys(traits).length > 0) {
        profileId = (await this.identifyCore(tx, { siteId: req.site_id, sessionId, visitorId, traits }, ctx, now)).profile_id;
      } else {
        profileId = await tx.profiles.createProfile(req.site_id, now);
      }
      const leadId = newId('lead');
      await tx.activity.insertLead({
        id: leadId,
        siteId: req.site_id,
        profileId,
        formId,
        kind,
        email: email ?? null,
        name: name ?? null,
        phone: phone ?? null,
        appointmentSlot: req.appointment_slot ?? null,
        source: req.source ?? null,
        workable,
        now,
      });
      await tx.activity.enqueue(
        req.site_id,
        'lead.captured',
        leadCapturedPayload({ siteId: req.site_id, leadId, formId, kind, profileId, workable, at: now }),
        now,
      );
      await this.membership.recompute(tx, req.site_id, profileId, now, { identity: true });
      return { lead_id: leadId, profile_id: profileId, form_id: formId, kind, workable };
    }, { session: req.session_id, visitor: req.visitor_id });
  }

  /**
   * Stores an event. `raw` is the request body exactly as received: custom
   * properties are kept verbatim, byte for byte. `site`: the event's site when
   * the caller has just looked it up (the router), else it is looked up here.
   */
  async recordEvent(req: EventRequest, raw: string, ctx: RequestContext, site?: SiteRow): Promise<{ event_id: string; profile_id: string }> {
    if (site?.id !== req.site_id) await this.site(req.site_id);
    const ts = req.timestamp !== undefined ? Date.parse(req.timestamp) : undefined;
    const url = (req as Record<string, unknown>).url;
    const vitals = webVitalsOf(req);
    const render = req.type === 'variant_render' ? parseVariantRender(req) : null;
    return this.write(req.site_id, ctx, async (tx) => {
      const now = Date.now();
      const clickIds = clickIdsFromUrl(url);
      // A behavioural event has an outbox row (webhooks) only when an enabled destination of its site subscribes to
      // its type: a destination sees the events committed after it was created or enabled, not those before. Asked
      // with the session's look-up, so that on PostgreSQL both share a statement wave (no round trip of its own); both
      // asked before either is awaited (afterward).
      const session = tx.profiles.ensureSession(
        req.site_id,
        req.session_id,
        req.visitor_id,
        { ip: ctx.ip, userAgent: ctx.userAgent, url, fbclid: clickIds.fbclid, gclid: clickIds.gclid },
        now,
      );
      const receives = BEHAVIOURAL_WEBHOOK_TYPES.has(req.type) ? afterward(tx.webhooks.receives(req.site_id, req.type)) : false;
      const s = await session;
      const wanted = await receives;
      const at = ts ?? now;
      // The outbox row carries the event's id: made by insertEvent from it, so that the store can write both
      // together. The triggers' look-up needs nothing from the event row: asked together, they share a statement
      // wave (fewer round trips per group commit on PostgreSQL).
      const notice = wanted
        ? (rowId: number) => {
            const properties: Record<string, unknown> = {};
            for (const k of Object.keys(req)) if (!EVENT_KEYS.has(k)) properties[k] = (req as Record<string, unknown>)[k];
            return {
              eventType: req.type,
              payload: behaviouralPayload({
                type: req.type,
                siteId: req.site_id,
                eventId: publicEventId(rowId),
                profileId: s.profileId,
                sessionId: req.session_id,
                visitorId: s.visitorId,
                at,
                properties,
              }),
            };
          }
        : undefined;
      const inserted = tx.activity.insertEvent(
        {
          siteId: req.site_id,
          sessionId: req.session_id,
          profileId: s.profileId,
          visitorId: s.visitorId,
          type: req.type,
          ts: at,
          body: raw,
          now,
        },
        notice,
      );
      const fired = afterward(triggers.onEvent(tx, req.site_id, s.profileId, req.type, now));
      const rowId = await inserted;
      await fired;
      const eventId = publicEventId(rowId);
      if (vitals) await recordWebVitals(tx, req.site_id, s.visitorId, url, vitals, now);
      if (render) await recordVariantRender(tx, req.site_id, render, now);
      await this.membership.recompute(tx, req.site_id, s.profileId, now);
      return { event_id: eventId, profile_id: s.profileId };
    }, { session: req.session_id });
  }

  async recordScore(req: ScoreRequest, raw: string, ctx: RequestContext): Promise<{ score_id: string; profile_id: string }> {
    await this.site(req.site_id);
    return this.write(req.site_id, ctx, async (tx) => {
      const now = Date.now();
      const s = await tx.profiles.ensureSession(req.site_id, req.session_id, req.visitor_id, sessionCtx(ctx), now);
      const rowId = await tx.activity.insertScore({
        siteId: req.site_id,
        sessionId: req.session_id,
        profileId: s.profileId,
        visitorId: s.visitorId,
        score: req.score ?? null,
        body: raw,
        now,
      });
      await triggers.onScore(tx, req.site_id, s.profileId, rowId, req.score ?? null, now);
      await this.membership.recompute(tx, req.site_id, s.profileId, now);
      return { score_id: scoreId(rowId), profile_id: s.profileId };
    }, { session: req.session_id });
  }

  /**
   * One write operation of an ingestion request. With an idempotency key, the answer first
   * given for the same key and site within IDEMPOTENCY_WINDOW_MS is returned instead (nothing
   * new is stored, `ctx.replayed` is set); otherwise the answer is remembered in the same
   * transaction as the data. A key first used on another path is a conflict.
   */
  private write<T>(siteId: string, ctx: RequestContext, op: WriteOp<T>, key?: { session?: string | null | undefined; visitor?: string | null | undefined }): Promise<T> {
    const idem = ctx.idempotency;
    // What the operation concerns (its session, else its visitor): operations of different sessions may
    // share their group's statements (Store.write); one with an idempotency key runs on its own turn.
    const anchor = key?.session != null ? `s\u0000${siteId}\u0000${key.session}` : key?.visitor != null ? `v\u0000${siteId}\u0000${key.visitor}` : undefined;
    if (idem === undefined) return this.store.write(op, { key: anchor });
    return this.store.write(async (tx) => {
      const now = Date.now();
      ctx.replayed = false;
      const prior = await tx.idempotency.get(siteId, idem.key, now - IDEMPOTENCY_WINDOW_MS);
      if (prior) {
        if (prior.path !== idem.path) {
          throw new AppError('conflict', `Idempotency-Key ${JSON.stringify(idem.key)} was used for ${prior.path} within 24 hours; use a new key`, {
            field: 'idempotency_key',
            path: prior.path,
          });
        }
        ctx.replayed = true;
        return JSON.parse(prior.response) as T;
      }
      const out = await op(tx);
      await tx.idempotency.put(siteId, idem.key, { path: idem.path, status: idem.status, response: JSON.stringify(out), created_at: now });
      return out;
    });
  }

  /** Identity stitching (see planIdentify); runs inside the write operation of `tx`. */
  private async identifyCore(tx: Repos, input: IdentifyCoreInput, ctx: RequestContext, now: number): Promise<IdentifyResult> {
    const profiles = tx.profiles;
    const { siteId, sessionId, visitorId } = input;
    const traits = { ...input.traits };
    let email: string | undefined;
    if (traits.email !== undefined) {
      email = normalizeEmail(traits.email) || undefined;
      if (email === undefined) delete traits.email;
      else traits.email = email;
    }
    const externalId = traits.external_id?.trim() || undefined;
    const session = sessionId !== undefined ? await profiles.session(siteId, sessionId) : undefined;
    const sessionOwner = session ? { id: session.profile_id, known: await profiles.isKnown(session.profile_id) } : undefined;
    const visitorOwner = await profiles.owner(siteId, 'visitor', visitorId);
    const plan = planIdentify({
      email: await profiles.owner(siteId, 'email', email),
      externalId: await profiles.owner(siteId, 'external_id', externalId),
      visitor: visitorOwner,
      session: sessionOwner,
    });
    if (plan.kind === 'conflict') throw new AppError('identity_conflict', plan.message);

    const anchor = sessionId !== undefined ? sessionOwner : visitorOwner;
    const targetId = plan.target?.id ?? (await profiles.createProfile(siteId, now));
    const wasKnownLink = anchor !== undefined && anchor.known && anchor.id === targetId;
    const before = await profiles.traits(targetId);
    let merged: Record<string, string> = {};
    for (const from of plan.absorb) {
      merged = { ...merged, ...(await profiles.traits(from)).traits };
      await profiles.mergeInto(from, targetId, now);
    }
    merged = { ...merged, ...before.traits, ...traits };
    const known = before.known || email !== undefined || externalId !== undefined;
    await profiles.setTraits(targetId, merged, known, now);
    // The plan saw who held each identity; a concurrent transaction (another instance) may have
    // claimed a free one since. The unique key decides, and the loser starts over and stitches.
    const claim = async (kind: 'email' | 'external_id', value: string) => {
      if (await profiles.addIdentity(siteId, kind, value, targetId, now)) return;
      if ((await profiles.owner(siteId, kind, value))?.id !== targetId) {
        throw new WriteConflict(`${kind} was claimed by a concurrent request`);
      }
    };
    if (email !== undefined) await claim('email', email);
    if (externalId !== undefined) await claim('external_id', externalId);
    if (visitorId !== undefined) await profiles.setIdentity(siteId, 'visitor', visitorId, targetId, now);
    if (email !== undefined) await profiles.setHash(siteId, 'email_sha256', sha256Hex(email), targetId, now);
    const phoneDigits = traits.phone !== undefined ? normalizePhoneDigits(traits.phone) : '';
    if (phoneDigits) await profiles.setHash(siteId, 'phone_sha256', sha256Hex(phoneDigits), targetId, now);
    if (sessionId !== undefined) {
      if (session) await profiles.linkSession(siteId, sessionId, targetId, visitorId, now);
      else await profiles.insertSession(siteId, sessionId, targetId, visitorId, sessionCtx(ctx), now);
    }
    // profile.identified fires when the session (else the visitor, else the profile itself)
    // was not already linked to this known profile: an anonymous session met a known identity.
    const hadAnchor = sessionId !== undefined || visitorId !== undefined;
    const identified = known && !(hadAnchor ? wasKnownLink : before.known && plan.target !== null);
    if (identified) {
      await tx.activity.enqueue(
        siteId,
        'profile.identified',
        profileIdentifiedPayload({
          siteId,
          visitorId: visitorId ?? session?.visitor_id ?? null,
          sessionId: sessionId ?? null,
          email: merged.email ?? null,
          externalId: merged.external_id ?? null,
          segment: before.primarySegment,
          at: now,
        }),
        now,
      );
    }
    return { profile_id: targetId, known, identified, merged_profiles: plan.absorb.length };
  }
}

/**
 * A promise to be awaited after another one: asked together (on PostgreSQL, calls asked in the same turn share a
 * statement wave), then awaited in turn. Without its own handler, its rejection while the first is awaited (or a
 * first that rejects and leaves it never awaited) would be an unhandled rejection; the await that comes later still
 * sees the rejection. In place of Promise.all, which makes a result array, a promise and two element functions per
 * call (about 1 KB an event for the two of recordEvent).
 */
function afterward<T>(p: Promise<T>): Promise<T> {
  p.catch(ignore);
  return p;
}

function ignore(): void {}

function sessionCtx(ctx: RequestContext): SessionContext {
  return { ip: ctx.ip, userAgent: ctx.userAgent };
}
