import { z } from 'zod';
import { HIGH_INTENT_SCORE } from '../../domain/funnels/service.js';
import { BASELINE_WEEKS } from '../../domain/stall/pass.js';
import { listFindings, runStall } from '../../domain/stall/service.js';
import { findingViewSchema, stallRunViewSchema } from '../../domain/stall/views.js';
import { defineTool } from '../tool.js';
import { isoInput, limitInput, ms } from './shared.js';

const area = 'stall';

export const stallRun = defineTool({
  name: 'stall_run',
  title: 'Run the stall pass',
  description: `Runs the weekly stall pass now for the ISO week (site time zone) containing as_of (default now): per funnel, cohort (high-intent sessions, each segment) and step, this week's step-to-step pass rate against the ${BASELINE_WEEKS} weeks before (one-sided two-proportion z-test, at least 30 sessions, 5 passes and 5 stalls each side, Benjamini-Hochberg at 5%). Files each stall once per site, step, cohort and week (inbox item, experiment proposal, stall.found); running it again files nothing twice. Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({
    as_of: isoInput.optional().describe('An instant in the ISO week to analyse, ISO 8601; default now (the week so far).'),
    baseline_weeks: z.number().int().min(1).max(12).default(BASELINE_WEEKS).describe(`ISO weeks before it that form the baseline, 1 to 12 (default ${BASELINE_WEEKS}).`),
    high_intent_score: z.number().min(0).max(1000).default(HIGH_INTENT_SCORE).describe(`Highest session score at or above which a session is high-intent (default ${HIGH_INTENT_SCORE}).`),
  }),
  output: stallRunViewSchema,
  handler: (ctx, input) => runStall(ctx.store, ctx.grant.siteId, { asOf: ms(input.as_of), baselineWeeks: input.baseline_weeks, highIntentScore: input.high_intent_score }),
});

export const stallFindings = defineTool({
  name: 'stall_findings',
  title: 'Stall findings',
  description: 'Findings of the stall pass, newest first, optionally of one ISO week or funnel. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    iso_week: z
      .string()
      .regex(/^\d{4}-W\d{2}$/)
      .optional()
      .describe('Only this ISO week, e.g. 2026-W48.'),
    funnel_id: z.string().min(1).max(128).optional().describe('Only this funnel.'),
    limit: limitInput(500, 100),
  }),
  output: z.object({ findings: z.array(findingViewSchema).describe('The findings.') }),
  handler: async (ctx, input) => ({ findings: await listFindings(ctx.store, ctx.grant.siteId, { isoWeek: input.iso_week, funnelId: input.funnel_id, limit: input.limit }) }),
});
