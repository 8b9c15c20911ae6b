import { z } from 'zod';

/** A step's key: a machine name (snake_case), unique in its funnel. */
export const stepKey = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,63}$/, 'snake_case, starting with a letter, at most 64 characters')
  .describe('Machine name of the step (snake_case), unique in the funnel; defaults to step_<position>.');

const label = z.string().trim().min(1).max(200).describe('Display label of the step; defaults to the pattern or event type.');

export const pageStepInput = z.strictObject({
  kind: z.literal('page').describe('The step is a pageview whose URL matches a page pattern.'),
  match: z.enum(['exact', 'prefix', 'glob']).describe('exact: the path (path + query when the pattern has ?); prefix: the path starts with it; glob: * any run but /, ** any run.'),
  pattern: z.string().min(1).max(500).startsWith('/', 'a page pattern is a path starting with /').describe('The page pattern, a path such as /checkout/shipping or /products/*.'),
  key: stepKey.optional(),
  label: label.optional(),
});

export const eventStepInput = z.strictObject({
  kind: z.literal('event').describe('The step is an event of a type (e.g. add_to_cart, or any custom type).'),
  event_type: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .describe('The event type as sent to /api/events.'),
  key: stepKey.optional(),
  label: label.optional(),
});

export const stepInput = z.discriminatedUnion('kind', [pageStepInput, eventStepInput]).describe('One funnel step: a page pattern or an event type.');
export type StepInput = z.output<typeof stepInput>;

export const stepsInput = z.array(stepInput).min(2).max(10).describe('The ordered steps, 2 to 10.');

/** A stored step (keys and labels filled in). */
export type FunnelStep =
  | { key: string; label: string; kind: 'page'; match: 'exact' | 'prefix' | 'glob'; pattern: string }
  | { key: string; label: string; kind: 'event'; event_type: string };

export const funnelStepView = z.object({
  position: z.number().int().describe('1-based position of the step.'),
  key: z.string().describe('Machine name of the step.'),
  label: z.string().describe('Display label.'),
  kind: z.enum(['page', 'event']).describe('page pattern or event type.'),
  match: z.enum(['exact', 'prefix', 'glob']).nullable().describe('Match type of a page step; null for an event step.'),
  pattern: z.string().nullable().describe('Page pattern; null for an event step.'),
  event_type: z.string().nullable().describe('Event type; null for a page step.'),
});

/** Fills in keys and labels; refuses duplicate keys. Returns an error message or the steps. */
export function normalizeSteps(steps: readonly StepInput[]): { ok: true; steps: FunnelStep[] } | { ok: false; message: string; index: number } {
  const out: FunnelStep[] = [];
  const seen = new Set<string>();
  for (const [i, s] of steps.entries()) {
    const key = s.key ?? `step_${i + 1}`;
    if (seen.has(key)) return { ok: false, message: `steps[${i}].key: ${key} is used by an earlier step`, index: i };
    seen.add(key);
    if (s.kind === 'page') out.push({ key, label: s.label ?? s.pattern, kind: 'page', match: s.match, pattern: s.pattern });
    else out.push({ key, label: s.label ?? s.event_type, kind: 'event', event_type: s.event_type });
  }
  return { ok: true, steps: out };
}

export function stepView(s: FunnelStep, i: number): z.input<typeof funnelStepView> {
  return {
    position: i + 1,
    key: s.key,
    label: s.label,
    kind: s.kind,
    match: s.kind === 'page' ? s.match : null,
    pattern: s.kind === 'page' ? s.pattern : null,
    event_type: s.kind === 'event' ? s.event_type : null,
  };
}
