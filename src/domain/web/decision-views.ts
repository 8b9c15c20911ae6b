import { z } from 'zod';
import type { DecisionResult } from './decisions.js';

/** The views of a decision previewed for a visitor (placements_preview_for_visitor, placements_explain_decision). */

const contentView = z
  .object({ id: z.string().describe('Content id.'), kind: z.enum(['html', 'json']).describe('html or json.'), body: z.string().describe('The body to render.') })
  .nullable()
  .describe('What the zone shows; null: the page as served.');

const reason = z
  .enum(['override_force_arm', 'override_pin_zone', 'override_personalization_off', 'holdout', 'shipped_experiment', 'experiment_arm', 'placement', 'default'])
  .describe('The precedence step that decided: override > holdout > shipped experiment > running experiment arm > placement > zone default.');

export const zoneDecisionView = z.object({
  zone_id: z.string().describe('Zone.'),
  page_id: z.string().describe('Its page.'),
  name: z.string().describe('Zone name.'),
  selector: z.string().describe('CSS selector.'),
  content: contentView,
  variant_id: z.string().nullable().describe('The variant shown; null: the zone default.'),
  experiment_id: z.string().nullable().describe('The experiment that decided, if any.'),
  arm_id: z.string().nullable().describe('The arm, if an experiment decided.'),
  placement_id: z.string().nullable().describe('The placement that decided, if any.'),
  override_id: z.string().nullable().describe('The override that decided, if any.'),
  reason,
});

export const visitorView = z.object({
  visitor_id: z.string().describe('The visitor id decided for.'),
  profile_id: z.string().nullable().describe('The profile the visitor id belongs to; null: unknown visitor.'),
  segment_ids: z.array(z.string()).describe('Segments the profile is in.'),
  holdout: z.boolean().describe('Whether the visitor is in the site holdout.'),
  earlier_arms: z.array(z.object({ experiment_id: z.string().describe('Experiment.'), arm_id: z.string().describe('Arm the visitor keeps.') })).describe('Arms the visitor was exposed to before.'),
});

export function visitorOut(r: DecisionResult): z.input<typeof visitorView> {
  return {
    visitor_id: r.visitor.visitorId,
    profile_id: r.visitor.profileId,
    segment_ids: [...r.visitor.segmentIds].sort(),
    holdout: r.decision.holdout,
    earlier_arms: [...r.visitor.earlierArms].map(([experiment_id, arm_id]) => ({ experiment_id, arm_id })),
  };
}

/** What every zone shows a visitor on a URL (placements_preview_for_visitor). */
export const decisionPreviewView = z.object({
  url: z.object({ path: z.string().describe('Path decided on.'), query: z.string().describe('Query string.') }).describe('The URL as matched.'),
  pages: z.array(z.object({ id: z.string().describe('Page.'), name: z.string().describe('Name.') })).describe('Pages whose pattern matches.'),
  visitor: visitorView,
  zones: z.array(zoneDecisionView).describe('One decision per zone.'),
});

/** Why every zone shows what it shows a visitor on a URL (placements_explain_decision). */
export const decisionExplainView = z.object({
  url: z.object({ path: z.string().describe('Path decided on.'), query: z.string().describe('Query string.') }).describe('The URL as matched.'),
  pages: z.array(z.object({ id: z.string().describe('Page.'), name: z.string().describe('Name.') })).describe('Pages whose pattern matches.'),
  visitor: visitorView,
  zones: z
    .array(
      zoneDecisionView.extend({
        chain: z
          .array(
            z.object({
              step: z.enum(['override', 'holdout', 'shipped', 'experiment', 'placement', 'default']).describe('Precedence step.'),
              outcome: z
                .enum(['applied', 'skipped', 'not_matched', 'none'])
                .describe('applied: decided; skipped: would apply but its variant cannot be served; not_matched: a placement for a segment the visitor is not in; none: nothing there.'),
              detail: z.string().describe('What was found.'),
            }),
          )
          .describe('Every step looked at, in precedence order, ending with the one that applied.'),
      }),
    )
    .describe('One explained decision per zone.'),
});

export function previewOut(r: DecisionResult): z.input<typeof decisionPreviewView> {
  return {
    url: r.decision.url,
    pages: r.decision.pages,
    visitor: visitorOut(r),
    zones: r.decision.zones.map(({ chain: _chain, holdout: _h, ...z }) => z),
  };
}

export function explainOut(r: DecisionResult): z.input<typeof decisionExplainView> {
  return {
    url: r.decision.url,
    pages: r.decision.pages,
    visitor: visitorOut(r),
    zones: r.decision.zones.map(({ holdout: _h, ...z }) => z),
  };
}
