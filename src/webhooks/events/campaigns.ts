import { z } from 'zod';
import { amount, code, count, currency, defineEvent, id, label, rate, siteId, timestamp } from './define.js';

const at = '2025-06-02T09:30:00.000Z';

const stepOutcome = z
  .strictObject({
    component_id: id('The campaign component.'),
    component: code('Kind of component, e.g. segment, variant, trigger, ad_audience.'),
    step: code('What was done to it, e.g. create, publish, activate, pause.'),
    outcome: z.enum(['succeeded', 'skipped', 'failed']).describe('How the step went.'),
    error_code: code('Machine code of the failure.').nullable().describe('Machine code of the failure; null unless failed.'),
  })
  .meta({ id: 'CampaignStepOutcome' });

const steps = z.array(stepOutcome).max(500).describe('Outcome of each step, per component.');

const exampleSteps: z.output<typeof steps> = [
  { component_id: 'seg_high_intent', component: 'segment', step: 'activate', outcome: 'succeeded', error_code: null },
  { component_id: 'var_hero_b', component: 'variant', step: 'publish', outcome: 'succeeded', error_code: null },
  { component_id: 'aud_retarget', component: 'ad_audience', step: 'sync', outcome: 'failed', error_code: 'platform_unavailable' },
];

/** campaign.launched: per-component step outcomes, never personal data. */
export const campaignLaunched = defineEvent({
  id: 'CampaignLaunchedEvent',
  description: 'A campaign is launched (per-component step outcomes).',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('campaign.launched'),
    site_id: siteId,
    campaign_id: id('The campaign.'),
    steps,
    timestamp,
  }),
  example: { event: 'campaign.launched', site_id: 'site_example', campaign_id: 'cmp_summer_sale', steps: exampleSteps, timestamp: at },
});

/** campaign.paused: per-component step outcomes, never personal data. */
export const campaignPaused = defineEvent({
  id: 'CampaignPausedEvent',
  description: 'A campaign is paused (per-component step outcomes).',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('campaign.paused'),
    site_id: siteId,
    campaign_id: id('The campaign.'),
    reason: code('Why it was paused, e.g. manual, guardrail, budget_exhausted.'),
    steps,
    timestamp,
  }),
  example: {
    event: 'campaign.paused',
    site_id: 'site_example',
    campaign_id: 'cmp_summer_sale',
    reason: 'manual',
    steps: exampleSteps.map((s) => ({ ...s, step: 'pause', outcome: 'succeeded' as const, error_code: null })),
    timestamp: at,
  },
});

/** campaign.closed: an outcome snapshot, never personal data. */
export const campaignClosed = defineEvent({
  id: 'CampaignClosedEvent',
  description: 'A campaign is closed (outcome snapshot).',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('campaign.closed'),
    site_id: siteId,
    campaign_id: id('The campaign.'),
    launched_at: z.iso.datetime().nullable().describe('When the campaign was launched, ISO 8601 UTC; null if it never was.'),
    outcome: z
      .strictObject({
        days_live: count('Days the campaign was live.'),
        exposed_visitors: count('Distinct visitors shown the campaign (its exposures, holdout excluded).'),
        holdout_visitors: count('Distinct holdout visitors on the same zones (the comparison group of lift).'),
        sessions: count('Sessions exposed to the campaign.'),
        profiles: count('Distinct profiles exposed.'),
        conversions: count('Conversions of exposed sessions.'),
        conversion_rate: rate('conversions / sessions (0 when there were no sessions).'),
        revenue: amount('Revenue of those conversions.'),
        currency,
        leads: count('Leads captured from exposed sessions.'),
        lift: z.number().nullable().describe('Relative conversion-rate lift over the holdout; null when unmeasured.'),
      })
      .describe('Aggregate results at close.'),
    timestamp,
  }),
  example: {
    event: 'campaign.closed',
    site_id: 'site_example',
    campaign_id: 'cmp_summer_sale',
    launched_at: '2025-05-01T07:00:00.000Z',
    outcome: {
      days_live: 32,
      exposed_visitors: 15230,
      holdout_visitors: 790,
      sessions: 18450,
      profiles: 12011,
      conversions: 702,
      conversion_rate: 0.038,
      revenue: 48210.4,
      currency: 'USD',
      leads: 233,
      lift: 0.094,
    },
    timestamp: at,
  },
});

/** stall.found: one per site, step, cohort and ISO week; never personal data. */
export const stallFound = defineEvent({
  id: 'StallFoundEvent',
  description: 'The weekly stall pass finds a cohort (high-intent visitors or a segment) stalled at a step.',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('stall.found'),
    site_id: siteId,
    iso_week: z
      .string()
      .regex(/^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$/)
      .describe('The ISO week of the pass, e.g. 2025-W23.'),
    funnel_id: id('The funnel.'),
    step_position: z.number().int().min(2).max(10).describe('1-based position of the step in the funnel (step 1 has no pass rate of its own).'),
    step: id('Machine name (key) of the funnel step the cohort stalls at: it reached the step before but did not pass this one.'),
    cohort_key: id('Stable key of the cohort: high_intent, or segment:<segment id>.'),
    cohort_label: label('Display label of the cohort.'),
    cohort_pass_rate: rate('Step-to-step pass rate of the cohort in the ISO week of the pass.'),
    baseline_pass_rate: rate('Step-to-step pass rate of the same cohort over the baseline (the ISO weeks before).'),
    sessions_per_week: count('Cohort sessions reaching the step (passing the step before) in the ISO week of the pass.'),
    stalled_sessions_per_week: count('Of those, sessions that did not pass the step.'),
    baseline_sessions_per_week: count('Cohort sessions reaching the step per baseline week (average, rounded).'),
    baseline_stalled_sessions_per_week: count('Of those, sessions that did not pass the step, per baseline week (average, rounded).'),
    value_per_week: amount('Estimated value lost per week.').nullable().describe('Estimated value lost per week; null when unknown.'),
    currency,
    proposed_action: z
      .string()
      .min(1)
      .max(2000)
      .describe('The suggested fix as text; a suggestion awaiting human approval, nothing has been applied.'),
    inbox_item_id: id('The inbox row filed for the stall.'),
    experiment_proposal_id: id('The experiment proposal filed for the stall.'),
    timestamp,
  }),
  example: {
    event: 'stall.found',
    site_id: 'site_example',
    iso_week: '2025-W23',
    funnel_id: 'fnl_00mbx2k1a3f9c2d4e5f6a7b8',
    step_position: 3,
    step: 'checkout_shipping',
    cohort_key: 'high_intent',
    cohort_label: 'High-intent visitors',
    cohort_pass_rate: 0.41,
    baseline_pass_rate: 0.63,
    sessions_per_week: 880,
    stalled_sessions_per_week: 519,
    baseline_sessions_per_week: 845,
    baseline_stalled_sessions_per_week: 313,
    value_per_week: 6120,
    currency: 'USD',
    proposed_action: 'Show the delivery date and free-returns note above the shipping form for high-intent visitors.',
    inbox_item_id: 'inbox_00mbx2k1a3f9c2d4e5f6a7b8',
    experiment_proposal_id: 'prop_00mbx2k1a3f9c2d4e5f6a7b8',
    timestamp: at,
  },
});
