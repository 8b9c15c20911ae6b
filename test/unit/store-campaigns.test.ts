import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { AppError } from '../../src/errors/app-error.js';
import { validatePayload } from '../../src/webhooks/catalogue.js';
import {
  addComponent,
  closeCampaign,
  createCampaign,
  launchCampaign,
  pauseCampaign,
  removeComponent,
} from '../../src/domain/campaigns/service.js';
import { campaignRunners, type ComponentStepRunner, type RunnerRegistry } from '../../src/domain/campaigns/runners.js';
import { failed, succeeded, type StepRecord } from '../../src/domain/campaigns/model.js';
import type { CampaignComponentKind } from '../../src/store/campaigns.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * The campaign launch, pause and close rules over a real store (SQLite, and PostgreSQL in the pg project):
 * a failed required step rolls the launch back and the attempt stays recorded, a failed optional step does
 * not, and the outcome snapshot counts what was exposed.
 */
let store: Store;
let dataDir: string;
let site: string;
const runners = campaignRunners();
const ACTOR = 'token:test';
let n = 0;

async function exec(sql: string, ...params: unknown[]): Promise<void> {
  await store.write((tx) => tx.sql.run(sql, params));
}

async function one<T>(sql: string, ...params: unknown[]): Promise<T> {
  return (await store.sql.get<T>(sql, params))!;
}

/** A page, a zone with default content, and helpers to add variants, placements and tests on it. */
async function fixture() {
  const k = ++n;
  const now = Date.now();
  const content = `cb_${k}`;
  const page = `pg_${k}`;
  const zone = `zn_${k}`;
  await exec('INSERT INTO content_blocks (id, site_id, name, kind, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)', content, site, 'Hero', 'html', '<p>x</p>', now, now);
  await exec('INSERT INTO pages (id, site_id, name, match_type, pattern, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)', page, site, 'Home', 'exact', `/p${k}`, now, now);
  await exec('INSERT INTO zones (id, site_id, page_id, name, selector, default_content_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', zone, site, page, 'hero', '#hero', content, now, now);
  let v = 0;
  const variant = async (status: string) => {
    const id = `var_${k}_${++v}`;
    await exec(
      'INSERT INTO variants (id, site_id, zone_id, content_id, segment_id, name, status, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)',
      id, site, zone, content, `V${v}`, status, 'token:x', now, now,
    );
    return id;
  };
  const placement = async (variantId: string, enabled = 0) => {
    const id = `plc_${k}_${++v}`;
    await exec('INSERT INTO placements (id, site_id, zone_id, variant_id, segment_id, priority, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, 0, ?, ?, ?)', id, site, zone, variantId, enabled, now, now);
    return id;
  };
  const experiment = async (status: string, armVariant: string | null, pauseReason: string | null = null) => {
    const id = `exp_${k}_${++v}`;
    await exec(
      `INSERT INTO experiments (id, site_id, name, page_id, zone_id, status, seed, primary_metric, pause_reason, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'conversion', ?, 'token:x', ?, ?)`,
      id, site, 'Test', page, zone, status, 'seed', pauseReason, now, now,
    );
    await exec('INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES (?, ?, ?, ?, 1, NULL, 0.5, 0)', `${id}_a`, site, id, 'Control');
    if (armVariant !== null) {
      await exec('INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES (?, ?, ?, ?, 0, ?, 0.5, 1)', `${id}_b`, site, id, 'B', armVariant);
    }
    return id;
  };
  const trigger = async (enabled: number) => {
    const id = `trg_${k}_${++v}`;
    await exec(
      `INSERT INTO triggers (id, site_id, name, on_kind, on_value, message_id, cap_count, cap_window_ms, enabled, created_by, created_at, updated_at)
       VALUES (?, ?, 'Welcome', 'event', 'signup', 'tpl_welcome', 1, 86400000, ?, 'token:x', ?, ?)`,
      id, site, enabled, now, now,
    );
    return id;
  };
  return { zone, variant, placement, experiment, trigger };
}

async function campaign(components: { kind: CampaignComponentKind; ref_id: string; required?: boolean }[], reg: RunnerRegistry = runners) {
  const c = await createCampaign(store, site, ACTOR, { name: `Campaign ${++n}` });
  for (const comp of components) await addComponent(store, reg, site, c.id, { required: true, ...comp });
  return c.id;
}

const variantStatus = (id: string) => one<{ status: string }>('SELECT status FROM variants WHERE id = ?', id).then((r) => r.status);
const placementEnabled = (id: string) => one<{ enabled: number }>('SELECT enabled FROM placements WHERE id = ?', id).then((r) => Number(r.enabled));
const experimentRow = (id: string) => one<{ status: string; started_at: number | null; paused_at: number | null }>('SELECT status, started_at, paused_at FROM experiments WHERE id = ?', id);
const events = (campaignId: string) =>
  store.sql
    .all<{ event_type: string; payload: string }>("SELECT event_type, payload FROM outbox WHERE site_id = ? AND event_type LIKE 'campaign.%' ORDER BY id", [site])
    .then((rows) => rows.map((r) => ({ type: r.event_type, payload: JSON.parse(r.payload) as Record<string, unknown> })).filter((e) => e.payload.campaign_id === campaignId));

async function launchError(id: string, reg: RunnerRegistry = runners): Promise<AppError> {
  try {
    await launchCampaign(store, reg, site, id, ACTOR);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('launch did not fail');
}

beforeAll(async () => {
  dataDir = tempDir();
  store = await openTestStore(dataDir);
  site = (await store.write((tx) => tx.sites.create({ name: 'Campaign shop', currency: 'EUR' }))).id;
});

afterAll(async () => {
  await store.close();
  cleanup(dataDir);
});

describe('launch and rollback', () => {
  it('rolls the whole launch back when a required step fails, and records the attempt with its outcomes', async () => {
    const f = await fixture();
    const approved = await f.variant('approved');
    const draft = await f.variant('draft');
    const plc = await f.placement(approved);
    const exp = await f.experiment('draft', approved);
    const id = await campaign([
      { kind: 'variant', ref_id: approved },
      { kind: 'placement', ref_id: plc },
      { kind: 'experiment', ref_id: exp },
      { kind: 'variant', ref_id: draft },
    ]);
    const err = await launchError(id);
    expect(err.code).toBe('conflict');
    expect(err.message).toContain(`variant ${draft} publish failed (not_approved`);
    // Nothing of the launch stayed applied: not the earlier steps that succeeded, not the status.
    expect(await variantStatus(approved)).toBe('approved');
    expect(await placementEnabled(plc)).toBe(0);
    expect(await experimentRow(exp)).toMatchObject({ status: 'draft', started_at: null });
    const c = (await store.campaigns.get(site, id))!;
    expect(c).toMatchObject({ status: 'draft', first_launched_at: null, live_since: null });
    expect(await events(id)).toEqual([]);
    // The attempt is recorded, with every step in launch order (variants, placements, tests).
    const runs = await store.campaigns.runs(site, id, 10);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ action: 'launch', result: 'rolled_back', actor: ACTOR });
    expect(err.details).toMatchObject({ run_id: runs[0]!.id, result: 'rolled_back' });
    const steps = JSON.parse(runs[0]!.steps) as StepRecord[];
    expect(steps.map((s) => [s.kind, s.ref_id, s.step, s.outcome, s.error_code])).toEqual([
      ['variant', approved, 'publish', 'succeeded', null],
      ['variant', draft, 'publish', 'failed', 'not_approved'],
      ['placement', plc, 'enable', 'succeeded', null],
      ['experiment', exp, 'start', 'succeeded', null],
    ]);
    // Once the draft is approved, the same campaign launches.
    await exec("UPDATE variants SET status = 'approved' WHERE id = ?", draft);
    const ok = await launchCampaign(store, runners, site, id, ACTOR);
    expect(ok.run.result).toBe('applied');
    expect(await variantStatus(approved)).toBe('published');
    expect(await variantStatus(draft)).toBe('published');
    expect(await placementEnabled(plc)).toBe(1);
    expect((await experimentRow(exp)).status).toBe('running');
    expect((await store.campaigns.runs(site, id, 10)).map((r) => r.result)).toEqual(['applied', 'rolled_back']);
  });

  it('keeps the launch when only an optional step fails, recording the failure', async () => {
    const f = await fixture();
    const approved = await f.variant('approved');
    const archived = await f.variant('archived');
    const plc = await f.placement(approved);
    const id = await campaign([
      { kind: 'variant', ref_id: approved },
      { kind: 'variant', ref_id: archived, required: false },
      { kind: 'placement', ref_id: plc },
    ]);
    const r = await launchCampaign(store, runners, site, id, ACTOR);
    expect(r.campaign.status).toBe('live');
    expect(r.run.result).toBe('applied');
    expect(r.steps.map((s) => [s.ref_id, s.outcome, s.error_code, s.required])).toEqual([
      [approved, 'succeeded', null, true],
      [archived, 'failed', 'variant_archived', false],
      [plc, 'succeeded', null, true],
    ]);
    expect(await variantStatus(approved)).toBe('published');
    expect(await variantStatus(archived)).toBe('archived');
    const ev = await events(id);
    expect(ev).toHaveLength(1);
    expect(ev[0]!.type).toBe('campaign.launched');
    expect(validatePayload('campaign.launched', ev[0]!.payload).success).toBe(true);
    expect(ev[0]!.payload.steps).toEqual([
      { component_id: approved, component: 'variant', step: 'publish', outcome: 'succeeded', error_code: null },
      { component_id: archived, component: 'variant', step: 'publish', outcome: 'failed', error_code: 'variant_archived' },
      { component_id: plc, component: 'placement', step: 'enable', outcome: 'succeeded', error_code: null },
    ]);
  });

  it('fails a placement whose variant is not published, and skips what is already live', async () => {
    const f = await fixture();
    const published = await f.variant('published');
    const draft = await f.variant('draft');
    const live = await f.placement(published, 1);
    const orphan = await f.placement(draft);
    const running = await f.experiment('running', published);
    const ended = await f.experiment('ended', published);
    const guarded = await f.experiment('paused', published, 'guardrail:lcp');
    const clash = await f.experiment('draft', published);
    const id = await campaign([
      { kind: 'variant', ref_id: published },
      { kind: 'placement', ref_id: live },
      { kind: 'placement', ref_id: orphan, required: false },
      { kind: 'experiment', ref_id: running },
      { kind: 'experiment', ref_id: ended, required: false },
      { kind: 'experiment', ref_id: guarded, required: false },
      { kind: 'experiment', ref_id: clash, required: false },
    ]);
    const r = await launchCampaign(store, runners, site, id, ACTOR);
    expect(r.steps.map((s) => [s.ref_id, s.outcome, s.error_code])).toEqual([
      [published, 'skipped', null],
      [live, 'skipped', null],
      [orphan, 'failed', 'variant_not_published'],
      [running, 'skipped', null],
      [ended, 'failed', 'experiment_ended'],
      // A guardrail pause is for a person to lift, not a campaign relaunch.
      [guarded, 'failed', 'guardrail_paused'],
      // The experiments area's own start rule: one live test per zone.
      [clash, 'failed', 'conflict'],
    ]);
    expect(r.steps[6]!.reason).toContain('another live test');
    expect(await placementEnabled(orphan)).toBe(0);
    expect([(await experimentRow(guarded)).status, (await experimentRow(clash)).status]).toEqual(['paused', 'draft']);
  });

  it('records a step runner that throws an AppError as a failed step, and rolls back when it is required', async () => {
    const f = await fixture();
    const approved = await f.variant('approved');
    const seg = await store.write((tx) => tx.segments.create({ siteId: site, name: `seg ${++n}`, rule: '{"all":[]}', priority: 0 }));
    const throwing: ComponentStepRunner = {
      kind: 'segment',
      steps: { launch: 'verify', pause: 'none', close: 'none' },
      exists: async () => true,
      launch: async () => {
        throw new AppError('service_unavailable', 'segment service down');
      },
      pause: async () => succeeded('ok'),
      close: async () => failed('x', 'x'),
    };
    const reg = new Map<CampaignComponentKind, ComponentStepRunner>(runners);
    reg.set('segment', throwing);
    const id = await campaign([{ kind: 'variant', ref_id: approved }, { kind: 'segment', ref_id: seg.id }], reg);
    const err = await launchError(id, reg);
    expect(err.details!.steps).toMatchObject([
      { kind: 'segment', outcome: 'failed', error_code: 'service_unavailable', reason: 'segment service down' },
      { kind: 'variant', outcome: 'succeeded' },
    ]);
    expect(await variantStatus(approved)).toBe('approved');
    // With the real segment runner the segment verifies.
    const ok = await launchCampaign(store, runners, site, id, ACTOR);
    expect(ok.steps[0]).toMatchObject({ kind: 'segment', step: 'verify', outcome: 'succeeded' });
  });

  it('refuses a launch without components, of a live campaign, and of a closed one', async () => {
    const empty = await createCampaign(store, site, ACTOR, { name: 'empty' });
    expect((await launchError(empty.id)).code).toBe('validation_failed');
    const f = await fixture();
    const v = await f.variant('approved');
    const id = await campaign([{ kind: 'variant', ref_id: v }]);
    await launchCampaign(store, runners, site, id, ACTOR);
    expect((await launchError(id)).message).toContain('already live');
    await closeCampaign(store, runners, site, id, ACTOR);
    expect((await launchError(id)).message).toContain('closed');
    // A refused launch records no run.
    expect((await store.campaigns.runs(site, id, 10)).map((r) => r.action)).toEqual(['close', 'launch']);
  });
});

describe('components', () => {
  it('checks the component exists in the site, changes the required flag in place, and refuses edits while live', async () => {
    const f = await fixture();
    const v = await f.variant('approved');
    const c = await createCampaign(store, site, ACTOR, { name: 'edit' });
    await expect(addComponent(store, runners, site, c.id, { kind: 'variant', ref_id: 'var_nope', required: true })).rejects.toMatchObject({ code: 'not_found' });
    await expect(addComponent(store, runners, site, c.id, { kind: 'trigger', ref_id: 'trg_x', required: true })).rejects.toMatchObject({ code: 'not_found' });
    await expect(addComponent(store, new Map(), site, c.id, { kind: 'variant', ref_id: v, required: true })).rejects.toMatchObject({ code: 'validation_failed' });
    const a = await addComponent(store, runners, site, c.id, { kind: 'variant', ref_id: v, required: true });
    expect(a.added).toBe(true);
    const b = await addComponent(store, runners, site, c.id, { kind: 'variant', ref_id: v, required: false });
    expect(b).toMatchObject({ added: false, component: { id: a.component.id, required: 0 } });
    expect(await store.campaigns.components(site, c.id)).toHaveLength(1);
    await launchCampaign(store, runners, site, c.id, ACTOR);
    await expect(removeComponent(store, site, c.id, { kind: 'variant', ref_id: v })).rejects.toMatchObject({ code: 'conflict' });
    await pauseCampaign(store, runners, site, c.id, ACTOR);
    await removeComponent(store, site, c.id, { kind: 'variant', ref_id: v });
    expect(await store.campaigns.components(site, c.id)).toEqual([]);
    await expect(removeComponent(store, site, c.id, { kind: 'variant', ref_id: v })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('keeps campaigns of other sites out of reach', async () => {
    const other = (await store.write((tx) => tx.sites.create({ name: 'Other' }))).id;
    const f = await fixture();
    const v = await f.variant('approved');
    const c = await createCampaign(store, other, ACTOR, { name: 'theirs' });
    // A variant of `site` cannot join a campaign of `other`, and `site` cannot see `other`'s campaign.
    await expect(addComponent(store, runners, other, c.id, { kind: 'variant', ref_id: v, required: true })).rejects.toMatchObject({ code: 'not_found' });
    await expect(launchCampaign(store, runners, site, c.id, ACTOR)).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('pause, relaunch and close', () => {
  it('pauses placements and tests, keeps variants, resumes on launch, and disables on close', async () => {
    const f = await fixture();
    const v = await f.variant('approved');
    const plc = await f.placement(v);
    const exp = await f.experiment('draft', v);
    const id = await campaign([
      { kind: 'variant', ref_id: v },
      { kind: 'placement', ref_id: plc },
      { kind: 'experiment', ref_id: exp },
    ]);
    const launched = await launchCampaign(store, runners, site, id, ACTOR);
    const started = (await experimentRow(exp)).started_at;
    expect(started).not.toBeNull();
    const paused = await pauseCampaign(store, runners, site, id, ACTOR);
    expect(paused.campaign.status).toBe('paused');
    expect(paused.steps.map((s) => [s.kind, s.step, s.outcome])).toEqual([
      ['experiment', 'pause', 'succeeded'],
      ['placement', 'disable', 'succeeded'],
      ['variant', 'keep', 'skipped'],
    ]);
    expect(await placementEnabled(plc)).toBe(0);
    expect(await variantStatus(v)).toBe('published');
    expect((await experimentRow(exp)).status).toBe('paused');
    await expect(pauseCampaign(store, runners, site, id, ACTOR)).rejects.toMatchObject({ code: 'conflict' });

    const again = await launchCampaign(store, runners, site, id, ACTOR);
    expect(again.steps.map((s) => [s.kind, s.outcome, s.reason])).toEqual([
      ['variant', 'skipped', 'already published'],
      ['placement', 'succeeded', 'enabled'],
      ['experiment', 'succeeded', 'resumed'],
    ]);
    expect(await experimentRow(exp)).toMatchObject({ status: 'running', started_at: started, paused_at: null });
    // first_launched_at stays the first launch.
    expect(again.campaign.first_launched_at).toBe(launched.campaign.first_launched_at);

    const closed = await closeCampaign(store, runners, site, id, ACTOR);
    expect(closed.campaign).toMatchObject({ status: 'closed', closed_by: ACTOR, live_since: null });
    expect(closed.steps.map((s) => [s.kind, s.step, s.outcome])).toEqual([
      ['experiment', 'end', 'succeeded'],
      ['placement', 'disable', 'succeeded'],
      ['variant', 'disable', 'succeeded'],
    ]);
    expect(await variantStatus(v)).toBe('disabled');
    expect((await experimentRow(exp)).status).toBe('ended');
    // Ending the test went through the experiments area: its experiment.ended was emitted in the same transaction.
    const ended = await store.sql.all<{ payload: string }>("SELECT payload FROM outbox WHERE site_id = ? AND event_type = 'experiment.ended'", [site]);
    expect(ended.map((e) => (JSON.parse(e.payload) as { experiment_id: string }).experiment_id)).toContain(exp);
    expect(await one<{ disabled_reason: string }>('SELECT disabled_reason FROM variants WHERE id = ?', v)).toEqual({ disabled_reason: 'campaign_closed' });
    const ev = await events(id);
    expect(ev.map((e) => e.type)).toEqual(['campaign.launched', 'campaign.paused', 'campaign.launched', 'campaign.closed']);
    for (const e of ev) expect(validatePayload(e.type as 'campaign.closed', e.payload).success).toBe(true);
    expect(ev[1]!.payload).toMatchObject({ reason: 'manual', steps: [{ component: 'experiment', step: 'pause', outcome: 'succeeded' }, {}, {}] });
  });

  it('enables triggers once the live endpoint is set, and disables them on pause with their pending fires cancelled', async () => {
    const f = await fixture();
    const on = await f.trigger(0);
    const id = await campaign([{ kind: 'trigger', ref_id: on }]);
    const err = await launchError(id);
    expect(err.details!.steps).toMatchObject([{ kind: 'trigger', step: 'enable', outcome: 'failed', error_code: 'endpoint_not_set' }]);
    await store.write((tx) => tx.triggers.setEndpoint({ site_id: site, url: 'https://mailer.example/hook', secret_enc: null, test_url: null, updated_by: ACTOR, updated_at: Date.now() }));
    const r = await launchCampaign(store, runners, site, id, ACTOR);
    expect(r.steps).toMatchObject([{ kind: 'trigger', step: 'enable', outcome: 'succeeded' }]);
    const enabled = () => one<{ enabled: number }>('SELECT enabled FROM triggers WHERE id = ?', on).then((x) => Number(x.enabled));
    expect(await enabled()).toBe(1);
    const now = Date.now();
    for (const [fid, reason] of [['fire_auto', 'event'], ['fire_hand', 'manual']]) {
      await exec(
        `INSERT INTO trigger_fires (id, site_id, trigger_id, profile_id, mode, reason, state, due_at, next_attempt_at, created_by, created_at)
         VALUES (?, ?, ?, 'prof_1', 'live', ?, 'pending', ?, ?, 'token:x', ?)`,
        `${fid}_${on}`, site, on, reason, now + 60_000, now + 60_000, now,
      );
    }
    const p = await pauseCampaign(store, runners, site, id, ACTOR);
    expect(p.steps).toMatchObject([{ kind: 'trigger', step: 'disable', outcome: 'succeeded', reason: 'disabled; 1 pending fires cancelled' }]);
    expect(await enabled()).toBe(0);
    const states = await store.sql.all<{ id: string; state: string }>('SELECT id, state FROM trigger_fires WHERE trigger_id = ? ORDER BY id', [on]);
    expect(states.map((x) => x.state)).toEqual(['cancelled', 'pending']);
    const c = await closeCampaign(store, runners, site, id, ACTOR);
    expect(c.steps).toMatchObject([{ kind: 'trigger', step: 'disable', outcome: 'skipped' }]);
  });

  it('closes a campaign that never launched with an empty snapshot', async () => {
    const c = await createCampaign(store, site, ACTOR, { name: 'never' });
    const r = await closeCampaign(store, runners, site, c.id, ACTOR);
    expect(r.outcome).toEqual({ days_live: 0, exposed_visitors: 0, holdout_visitors: 0, sessions: 0, profiles: 0, conversions: 0, conversion_rate: 0, revenue: 0, currency: 'EUR', leads: 0, lift: null });
    const ev = await events(c.id);
    expect(ev[0]!.payload).toMatchObject({ event: 'campaign.closed', launched_at: null });
    await expect(closeCampaign(store, runners, site, c.id, ACTOR)).rejects.toMatchObject({ code: 'conflict' });
  });
});

describe('the outcome snapshot at close', () => {
  it('counts exposed sessions, profiles, conversions, revenue and leads after the first exposure, and lift over the holdout', async () => {
    const f = await fixture();
    const v = await f.variant('approved');
    const plc = await f.placement(v);
    const exp = await f.experiment('draft', v);
    const id = await campaign([
      { kind: 'placement', ref_id: plc },
      { kind: 'experiment', ref_id: exp },
    ]);
    await exec("UPDATE variants SET status = 'published' WHERE id = ?", v);
    await launchCampaign(store, runners, site, id, ACTOR);
    // Launched 10 days (and a second) ago, so every row below lies between the launch and the close.
    const t0 = Date.now() - 10 * 86_400_000 - 1000;
    await exec('UPDATE campaigns SET first_launched_at = ?, live_since = ? WHERE id = ?', t0, t0, id);
    const k = ++n;
    const seen = new Set<string>();
    const session = async (sid: string, visitor: string, profile: string, first: number, last: number) => {
      // As ingestion does: the visitor id is an identity of the profile.
      if (!seen.has(visitor)) await exec("INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, 'visitor', ?, ?, ?)", site, visitor, profile, first);
      seen.add(visitor);
      await exec('INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?)', site, sid, profile, visitor, first, last);
    };
    const expose = (visitor: string, profile: string | null, variant: string | null, holdout: number, at: number) =>
      exec('INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, holdout, url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', site, visitor, profile, f.zone, variant, holdout, '/p', at);
    const convert = (cid: string, sid: string, profile: string, revenue: number, currency: string, at: number) =>
      exec("INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES (?, ?, ?, ?, ?, ?, '[]', ?)", cid, site, sid, profile, revenue, currency, at);
    const lead = (lid: string, profile: string, at: number) =>
      exec("INSERT INTO leads (id, site_id, profile_id, form_id, kind, workable, status, created_at) VALUES (?, ?, ?, 'f', 'lead_form', 1, 'new', ?)", lid, site, profile, at);
    // Exposed: visitors a (2 sessions, one conversion before the exposure that must not count, one after,
    // plus one in USD that counts but adds no EUR revenue) and b (no conversion; its exposure names no
    // profile, its visitor identity does); c exposed before launch: not counted.
    await session(`s${k}a1`, `va${k}`, `pa${k}`, t0 + 10, t0 + 100);
    await session(`s${k}a2`, `va${k}`, `pa${k}`, t0 + 200, t0 + 300);
    await session(`s${k}b1`, `vb${k}`, `pb${k}`, t0 + 10, t0 + 50);
    await session(`s${k}c1`, `vc${k}`, `pc${k}`, t0 - 5000, t0 - 4000);
    await expose(`va${k}`, `pa${k}`, v, 0, t0 + 20);
    await expose(`va${k}`, `pa${k}`, v, 0, t0 + 210);
    await expose(`vb${k}`, null, v, 0, t0 + 20);
    await expose(`vc${k}`, `pc${k}`, v, 0, t0 - 4500);
    await convert(`c${k}1`, `s${k}a1`, `pa${k}`, 999, 'EUR', t0 + 15);
    await convert(`c${k}2`, `s${k}a1`, `pa${k}`, 40.5, 'EUR', t0 + 30);
    await convert(`c${k}3`, `s${k}a2`, `pa${k}`, 12, 'USD', t0 + 250);
    await convert(`c${k}4`, `s${k}c1`, `pc${k}`, 7, 'EUR', t0 - 4200);
    await lead(`l${k}1`, `pa${k}`, t0 + 40);
    await lead(`l${k}2`, `pb${k}`, t0 + 5);
    // Holdout on the same zone: 4 visitors, 1 converting → rate 0.25.
    for (let i = 0; i < 4; i++) {
      await session(`s${k}h${i}`, `vh${k}${i}`, `ph${k}${i}`, t0 + 10, t0 + 60);
      await expose(`vh${k}${i}`, null, null, 1, t0 + 20);
    }
    await convert(`c${k}h`, `s${k}h0`, `ph${k}0`, 5, 'EUR', t0 + 30);
    // d saw the campaign's test (its control arm: no variant), then converted; e saw another test: not counted.
    const exposeArm = (visitor: string, experimentId: string, at: number) =>
      exec('INSERT INTO exposures (site_id, visitor_id, zone_id, experiment_id, arm_id, holdout, url, created_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)', site, visitor, f.zone, experimentId, `${experimentId}_a`, '/p', at);
    await session(`s${k}d1`, `vd${k}`, `pd${k}`, t0 + 10, t0 + 80);
    await exposeArm(`vd${k}`, exp, t0 + 20);
    await convert(`c${k}d`, `s${k}d1`, `pd${k}`, 10, 'EUR', t0 + 40);
    await session(`s${k}e1`, `ve${k}`, `pe${k}`, t0 + 10, t0 + 80);
    await exposeArm(`ve${k}`, 'exp_elsewhere', t0 + 20);
    await convert(`c${k}e`, `s${k}e1`, `pe${k}`, 1000, 'EUR', t0 + 40);
    const closed = await closeCampaign(store, runners, site, id, ACTOR);
    expect(closed.outcome).toEqual({
      days_live: 10,
      // a, b and d (c before the launch, e another test's); 4 holdout visitors on the zone.
      exposed_visitors: 3,
      holdout_visitors: 4,
      sessions: 4,
      profiles: 3,
      conversions: 3,
      conversion_rate: 0.75,
      revenue: 50.5,
      currency: 'EUR',
      leads: 1,
      // exposed: 2 of 3 profiles converted; holdout: 1 of 4 → (2/3 − 1/4) / (1/4) = 5/3.
      lift: 1.666667,
    });
    const ev = await events(id);
    const last = ev[ev.length - 1]!;
    expect(last.type).toBe('campaign.closed');
    expect(last.payload.outcome).toEqual(closed.outcome);
    expect(last.payload.launched_at).toBe(new Date(t0).toISOString());
    expect(JSON.parse((await store.campaigns.get(site, id))!.outcome!)).toEqual(closed.outcome);
  });
});
