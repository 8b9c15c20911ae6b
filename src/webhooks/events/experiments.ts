import { z } from 'zod';
import { amount, count, currency, defineEvent, id, idOrNull, label, rate, siteId, timestamp } from './define.js';

const at = '2025-06-02T09:30:00.000Z';

const armResult = z
  .strictObject({
    arm_id: id('The arm.'),
    label: label('Name of the arm as the team set it.'),
    control: z.boolean().describe('Whether this arm is the control.'),
    sessions: count('Visitors exposed to the arm (distinct visitor ids, each counted in the arm of its first exposure).'),
    conversions: count('Of those visitors, the ones who converted after their first exposure.'),
    conversion_rate: rate('conversions / sessions (0 when no visitor was exposed).'),
    revenue: amount('Revenue of the conversions of those visitors after their first exposure.'),
    lift: z.number().nullable().describe("Relative lift of the test's primary metric over the control (0.12 = +12%); null for the control or when the control's value is 0."),
    probability_to_beat_control: rate('Probability that the arm beats the control.')
      .nullable()
      .describe('Probability that the arm beats the control on the primary metric (normal approximation, flat prior); null for the control.'),
  })
  .meta({ id: 'ExperimentArmResult' });

/** experiment.ended: per-arm results. */
export const experimentEnded = defineEvent({
  id: 'ExperimentEndedEvent',
  description: 'A layout test ends (scheduled end, significance, or by hand).',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('experiment.ended'),
    site_id: siteId,
    experiment_id: id('The layout test.'),
    reason: z.enum(['scheduled_end', 'significance', 'manual']).describe('Why the test ended.'),
    started_at: z.iso.datetime().describe('When the test started, ISO 8601 UTC.'),
    winning_arm_id: idOrNull('The arm that won.'),
    currency,
    arms: z.array(armResult).min(1).describe('Results per arm, the control first.'),
    timestamp,
  }),
  example: {
    event: 'experiment.ended',
    site_id: 'site_example',
    experiment_id: 'exp_pricing_hero',
    reason: 'significance',
    started_at: '2025-05-12T08:00:00.000Z',
    winning_arm_id: 'arm_b',
    currency: 'USD',
    arms: [
      {
        arm_id: 'arm_a',
        label: 'Control',
        control: true,
        sessions: 4210,
        conversions: 168,
        conversion_rate: 0.0399,
        revenue: 12480,
        lift: null,
        probability_to_beat_control: null,
      },
      {
        arm_id: 'arm_b',
        label: 'Short hero with social proof',
        control: false,
        sessions: 4187,
        conversions: 201,
        conversion_rate: 0.048,
        revenue: 14935.5,
        lift: 0.203,
        probability_to_beat_control: 0.987,
      },
    ],
    timestamp: at,
  },
});

/** experiment.shipped: the winning arm goes live for everyone. */
export const experimentShipped = defineEvent({
  id: 'ExperimentShippedEvent',
  description: "A layout test's winning arm is shipped live for everyone.",
  personalData: false,
  schema: z.strictObject({
    event: z.literal('experiment.shipped'),
    site_id: siteId,
    experiment_id: id('The layout test.'),
    arm_id: id('The arm that was shipped.'),
    arm_label: label('Name of the shipped arm.'),
    lift: z.number().nullable().describe("Relative lift of the arm's primary metric over the control; null for the control or when unknown."),
    shipped_by: z.enum(['user', 'automation']).describe('Whether a team member or an automation shipped it.'),
    timestamp,
  }),
  example: {
    event: 'experiment.shipped',
    site_id: 'site_example',
    experiment_id: 'exp_pricing_hero',
    arm_id: 'arm_b',
    arm_label: 'Short hero with social proof',
    lift: 0.203,
    shipped_by: 'user',
    timestamp: at,
  },
});

/** experiment.guardrail_paused: names the Core Web Vitals metric, the arm and both p75 values. */
export const experimentGuardrailPaused = defineEvent({
  id: 'ExperimentGuardrailPausedEvent',
  description: 'A Core Web Vitals guardrail pauses a layout test automatically.',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('experiment.guardrail_paused'),
    site_id: siteId,
    experiment_id: id('The paused layout test.'),
    metric: z.enum(['lcp', 'inp', 'cls']).describe('The Core Web Vital that tripped (lcp and inp in milliseconds, cls unitless).'),
    arm_id: id('The arm that breached the guardrail.'),
    arm_p75: z.number().min(0).describe('75th percentile of the metric on the arm.'),
    control_p75: z.number().min(0).describe('75th percentile of the metric on the control.'),
    timestamp,
  }),
  example: {
    event: 'experiment.guardrail_paused',
    site_id: 'site_example',
    experiment_id: 'exp_pricing_hero',
    metric: 'lcp',
    arm_id: 'arm_b',
    arm_p75: 3180,
    control_p75: 2240,
    timestamp: at,
  },
});

/** variant.watchdog_disabled: carries the render counts that tripped the watchdog. */
export const variantWatchdogDisabled = defineEvent({
  id: 'VariantWatchdogDisabledEvent',
  description: 'The variant watchdog disables a variant that keeps failing to render.',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('variant.watchdog_disabled'),
    site_id: siteId,
    variant_id: id('The disabled variant.'),
    zone_id: idOrNull('The zone the variant renders in.'),
    experiment_id: idOrNull('The layout test the variant belongs to.'),
    render_attempts: count('Render attempts in the window.'),
    render_failures: count('Failed renders in the window.'),
    window_minutes: z.number().int().min(1).describe('Length of the observation window in minutes.'),
    timestamp,
  }),
  example: {
    event: 'variant.watchdog_disabled',
    site_id: 'site_example',
    variant_id: 'var_hero_b',
    zone_id: 'zone_hero',
    experiment_id: 'exp_pricing_hero',
    render_attempts: 320,
    render_failures: 117,
    window_minutes: 15,
    timestamp: at,
  },
});
