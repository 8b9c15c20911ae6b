import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { validationError } from '../../errors/validation.js';
import { mintReportLink, REPORT_LINK_DEFAULT_MINUTES, REPORT_LINK_MAX_MINUTES, reportLinkViewSchema } from '../../domain/access/report-link.js';
import { policyFacts } from '../call.js';
import { reportGrant } from '../../domain/access/grant.js';
import { decide } from '../../domain/access/policy.js';
import { defineTool } from '../tool.js';

export const reportLinkMint = defineTool({
  name: 'access_report_link_mint',
  title: 'Mint a signed report link',
  description:
    "A short-lived signed link (…/api/mcp/report?link=…) into a report: the live result of one read tool with fixed arguments (e.g. accounts_signals of one company, campaigns_get of a campaign, analytics_lift), for someone without a token. The report runs with the read scope and this token's restrictions (read-only, its areas), so it never shows more than this token could read and no personal data. It works until it expires (at most 24 hours) or this token is revoked or expires. Nothing is stored: the link is signed with the server's secret key. The link is a secret.",
  area: 'access',
  scope: 'admin',
  flags: { changesData: true, issuesCredentials: true },
  input: z.object({
    tool: z.string().min(1).max(100).describe('The read tool whose result the link shows, e.g. accounts_signals.'),
    arguments: z.record(z.string(), z.unknown()).meta({ additionalProperties: true }).default({}).describe("The tool's arguments, checked now against its input schema."),
    expires_in_minutes: z
      .number()
      .int()
      .min(1)
      .max(REPORT_LINK_MAX_MINUTES)
      .default(REPORT_LINK_DEFAULT_MINUTES)
      .describe(`Lifetime in minutes (default ${REPORT_LINK_DEFAULT_MINUTES}, at most ${REPORT_LINK_MAX_MINUTES}).`),
  }),
  output: reportLinkViewSchema,
  handler: (ctx, input) => {
    const tool = ctx.tools.find((t) => t.name === input.tool);
    if (!tool) throw new AppError('not_found', `no tool ${input.tool}; find one with tools_search`, { field: 'tool' });
    if (tool.flags.changesData || tool.scope !== 'read') {
      throw new AppError('validation_failed', `tool: ${tool.name} is not a read tool; a report shows what a read tool returns`, { field: 'tool' });
    }
    const d = decide(reportGrant(ctx.grant), policyFacts(tool));
    if (!d.allowed) throw new AppError('insufficient_scope', `a report link of this token cannot call ${tool.name}: ${d.message}`, { field: 'tool', reason: d.reason, missing: d.missing });
    const parsed = tool.input.safeParse(input.arguments);
    if (!parsed.success) {
      const e = validationError(parsed.error);
      throw new AppError('validation_failed', `arguments.${e.message}`, { ...e.details, field: `arguments.${String(e.details?.field)}` });
    }
    return mintReportLink(ctx.store, { siteId: ctx.grant.siteId, minterTokenId: ctx.grant.tokenId, tool: tool.name, args: input.arguments, minutes: input.expires_in_minutes });
  },
});
