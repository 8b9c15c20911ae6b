import { z } from 'zod';
import type { CampaignComponentRow, CampaignRow, CampaignRunRow } from '../../store/campaigns.js';
import { COMPONENT_KINDS, liveMs, STEP_OUTCOMES, type CampaignOutcome, type StepRecord } from './model.js';

/** The views of campaigns: the campaign with its components, its runs and the outcome snapshot. */

/** ISO 8601 of a millisecond timestamp; null stays null. */
const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());
const num = (v: number | null) => (v === null ? null : Number(v));

export const componentView = z.object({
  id: z.string().describe('Component id within the campaign (cmc_...).'),
  kind: z.enum(COMPONENT_KINDS).describe('Kind of component.'),
  ref_id: z.string().describe('Id of the bundled segment, variant, placement, experiment or trigger.'),
  required: z.boolean().describe('Whether a failed launch step of this component rolls the whole launch back.'),
  added_at: z.string().describe('When it was added, ISO 8601.'),
});

export const stepView = z.object({
  component_id: z.string().describe('Component id within the campaign.'),
  kind: z.enum(COMPONENT_KINDS).describe('Kind of component.'),
  ref_id: z.string().describe('Id of the component.'),
  required: z.boolean().describe('Whether the component is required.'),
  step: z.string().describe('What was done: verify, publish, enable, start, keep, disable, pause, none.'),
  outcome: z.enum(STEP_OUTCOMES).describe('succeeded, skipped (nothing to do) or failed.'),
  error_code: z.string().nullable().describe('Machine code of a failure; null unless failed.'),
  reason: z.string().describe('What happened, in words.'),
});

export const runView = z.object({
  id: z.string().describe('Run id (cmr_...).'),
  action: z.enum(['launch', 'pause', 'close']).describe('The action.'),
  result: z.enum(['applied', 'rolled_back']).describe('applied, or rolled_back: a required launch step failed and nothing of the launch stayed applied.'),
  steps: z.array(stepView).describe('Outcome of each component step, in the order they ran.'),
  actor: z.string().describe('Who ran it (token:<id>).'),
  at: z.string().describe('When, ISO 8601.'),
});

export const outcomeView = z
  .object({
    days_live: z.number().int().describe('Whole days the campaign was live (paused time excluded).'),
    exposed_visitors: z.number().int().nullable().describe('Distinct visitors shown the campaign (holdout excluded); null in snapshots taken before this was recorded.'),
    holdout_visitors: z.number().int().nullable().describe('Distinct holdout visitors on the same zones; null in snapshots taken before this was recorded.'),
    sessions: z.number().int().describe('Sessions of the profiles exposed to the campaign, from their first exposure.'),
    profiles: z.number().int().describe('Distinct profiles exposed to the campaign (a visitor counts as its profile).'),
    conversions: z.number().int().describe('Conversions of those profiles after their first exposure.'),
    conversion_rate: z.number().describe('conversions / sessions (0 without sessions).'),
    revenue: z.number().describe('Revenue of those conversions in the site currency.'),
    currency: z.string().describe('ISO 4217 currency of revenue.'),
    leads: z.number().int().describe('Leads of exposed profiles after their first exposure.'),
    lift: z.number().nullable().describe('Relative lift of the profile conversion rate over the holdout on the same zones; null when unmeasured.'),
  })
  .describe('The outcome snapshot taken at close.');

export const campaignView = z.object({
  id: z.string().describe('Campaign id.'),
  name: z.string().describe('Name.'),
  description: z.string().nullable().describe('Description, if any.'),
  status: z.enum(['draft', 'live', 'paused', 'closed']).describe('draft → live ⇄ paused → closed.'),
  components: z.array(componentView).describe('The bundled components, in the order they were added.'),
  created_by: z.string().describe('Who created it.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
  first_launched_at: z.string().nullable().describe('First launch, ISO 8601; null if never launched.'),
  live_since: z.string().nullable().describe('Start of the current live period; null unless live.'),
  live_days: z.number().describe('Days live so far (paused time excluded), with decimals.'),
  paused_at: z.string().nullable().describe('Last pause, ISO 8601.'),
  closed_at: z.string().nullable().describe('Close, ISO 8601.'),
  closed_by: z.string().nullable().describe('Who closed it.'),
  outcome: outcomeView.nullable().describe('The outcome snapshot taken at close; null until closed.'),
});

export type CampaignView = z.input<typeof campaignView>;

export function componentOut(c: CampaignComponentRow): z.input<typeof componentView> {
  return { id: c.id, kind: c.kind, ref_id: c.ref_id, required: Number(c.required) === 1, added_at: iso(Number(c.created_at))! };
}

export function runOut(r: CampaignRunRow): z.input<typeof runView> {
  return { id: r.id, action: r.action, result: r.result, steps: JSON.parse(r.steps) as StepRecord[], actor: r.actor, at: iso(Number(r.created_at))! };
}

export function campaignOut(c: CampaignRow, components: readonly CampaignComponentRow[]): CampaignView {
  return {
    id: c.id,
    name: c.name,
    description: c.description,
    status: c.status,
    components: components.map(componentOut),
    created_by: c.created_by,
    created_at: iso(Number(c.created_at))!,
    updated_at: iso(Number(c.updated_at))!,
    first_launched_at: iso(num(c.first_launched_at)),
    live_since: iso(num(c.live_since)),
    live_days: Math.round((liveMs(c, Date.now()) / 86_400_000) * 1000) / 1000,
    paused_at: iso(num(c.paused_at)),
    closed_at: iso(num(c.closed_at)),
    closed_by: c.closed_by,
    outcome: c.outcome === null ? null : outcomeOf(c.outcome),
  };
}

/** A stored snapshot; ones closed before the visitor counts were recorded read them as null. */
function outcomeOf(json: string): z.infer<typeof outcomeView> {
  const o = JSON.parse(json) as Partial<CampaignOutcome> & Omit<CampaignOutcome, 'exposed_visitors' | 'holdout_visitors'>;
  return { ...o, exposed_visitors: o.exposed_visitors ?? null, holdout_visitors: o.holdout_visitors ?? null };
}

/** The result of a launch, pause or close. */
export const actionView = z.object({
  campaign: campaignView.describe('The campaign after the action.'),
  run: runView.describe('The recorded run with every step outcome.'),
});

/** A page of campaigns (campaigns_list). */
export const campaignListView = z.object({
  campaigns: z
    .array(
      z.object({
        id: z.string().describe('Campaign id.'),
        name: z.string().describe('Name.'),
        status: z.enum(['draft', 'live', 'paused', 'closed']).describe('Status.'),
        components: z.number().int().describe('Number of components.'),
        first_launched_at: z.string().nullable().describe('First launch, ISO 8601.'),
        closed_at: z.string().nullable().describe('Close, ISO 8601.'),
        created_at: z.string().describe('ISO 8601.'),
      }),
    )
    .describe('The page of campaigns.'),
  next_before: z.string().nullable().describe('Pass as `before` for the next page; null on the last page.'),
});

/** A campaign as campaigns_list shows it. */
export function campaignSummaryOut(c: CampaignRow, components: number): z.input<typeof campaignListView>['campaigns'][number] {
  return {
    id: c.id,
    name: c.name,
    status: c.status,
    components,
    first_launched_at: iso(num(c.first_launched_at)),
    closed_at: iso(num(c.closed_at)),
    created_at: iso(Number(c.created_at))!,
  };
}
