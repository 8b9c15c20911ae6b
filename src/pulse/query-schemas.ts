import { z } from 'zod';
import { ruleSchema } from '../domain/segments/rules.js';
import { PAGE_LIMIT } from './schemas.js';

export const profilesQuerySchema = z
  .strictObject({
    rule: ruleSchema.describe('A rule of the segment rule language (see the README).'),
    limit: z.number().int().min(1).max(PAGE_LIMIT.max).optional().describe(`Page size, 1 to ${PAGE_LIMIT.max} (default ${PAGE_LIMIT.default}).`),
    cursor: z.string().min(1).max(512).optional().describe('next_cursor of the previous page (send the same rule).'),
  })
  .meta({ id: 'ProfilesQuery' });

export const profilesQueryPageSchema = z
  .object({
    profile_ids: z.array(z.string()),
    next_cursor: z.string().nullable(),
    evaluated_at: z.string().describe('The instant time windows are measured from; fixed for all pages of one query.'),
  })
  .meta({ id: 'ProfilesQueryPage', description: 'Profile ids the rule matches, in ascending id order (keyset-paginated).' });
