import { z } from 'zod';

/**
 * One entry of the event catalogue: the payload schema (the single truth for
 * validation, TypeScript types and JSON Schema), a one-line description,
 * whether the payload carries personal data, and an example that validates.
 */
export interface EventDefinition<S extends z.ZodType = z.ZodType> {
  readonly schema: S;
  readonly description: string;
  readonly personalData: boolean;
  readonly example: z.output<S>;
}

/** Builds a catalogue entry; the id and description are stored on the schema with `.meta()`. */
export function defineEvent<S extends z.ZodType>(def: {
  id: string;
  description: string;
  personalData: boolean;
  schema: S;
  example: z.output<S>;
}): EventDefinition<S> {
  return {
    schema: def.schema.meta({ id: def.id, description: def.description }),
    description: def.description,
    personalData: def.personalData,
    example: def.example,
  };
}

/** Public site identifier. */
export const siteId = z.string().min(1).max(64).describe('Public site identifier.');

/** When the event happened: ISO 8601, UTC (`Z`). */
export const timestamp = z.iso.datetime().describe('When the event happened, ISO 8601 UTC.');

/** A required identifier. */
export const id = (what: string) => z.string().min(1).max(256).describe(what);

/** An identifier that is the empty string when unknown (the shape the ingestion payloads use). */
export const idOrEmpty = (what: string) => z.string().max(256).describe(`${what} Empty string when unknown.`);

/** An identifier that is null when there is none. */
export const idOrNull = (what: string) => z.string().min(1).max(256).nullable().describe(`${what} Null when there is none.`);

/** A non-negative integer count. */
export const count = (what: string) => z.number().int().min(0).describe(what);

/** A proportion between 0 and 1. */
export const rate = (what: string) => z.number().min(0).max(1).describe(what);

/** A non-negative amount of money. */
export const amount = (what: string) => z.number().min(0).describe(what);

/** ISO 4217 currency code. */
export const currency = z
  .string()
  .regex(/^[A-Z]{3}$/)
  .describe('ISO 4217 currency code of the amounts.');

/** A machine code in snake_case: never free text, so it cannot carry personal values. */
export const code = (what: string) =>
  z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,63}$/)
    .describe(what);

/** A display label chosen by the site's team (arm, cohort or component names), never visitor input. */
export const label = (what: string) => z.string().min(1).max(200).describe(what);
