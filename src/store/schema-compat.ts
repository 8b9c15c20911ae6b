import type { Migration } from './migrations.js';

/** A row of schema_migrations as the compatibility rule reads it. */
export interface AppliedMigration {
  version: number;
  /** The oldest schema version whose svc runs against the store once this migration is applied (null: rows from before the rule, this version only). */
  compatible_from: number | null;
}

/**
 * Rolling upgrades: a migration marked `expand` keeps the store usable by the
 * release before it, so the oldest schema version that can run against the
 * store stays what it was; any other migration moves it to its own version.
 */
export function compatibleFromAfter(m: Migration, previous: AppliedMigration | undefined): number {
  if (!m.expand) return m.version;
  return previous === undefined ? m.version - 1 : (previous.compatible_from ?? previous.version);
}

/**
 * Whether an svc that knows migrations up to `known` may run against a store
 * with `applied` migrations: null when it may, else why not. A store ahead of
 * it is usable while every migration it lacks is expand-only down to `known`;
 * a store behind it (never the case once it has migrated the store itself) is not.
 */
export function schemaProblem(known: number, applied: readonly AppliedMigration[]): string | null {
  const newest = Math.max(0, ...applied.map((r) => r.version));
  if (newest < known) return `the database is at schema version ${newest}, older than this svc (${known}): run svc migrate`;
  if (newest === known) return null;
  const needs = Math.max(...applied.filter((r) => r.version > known).map((r) => r.compatible_from ?? r.version));
  if (needs <= known) return null;
  const base = `the database is at schema version ${newest}, newer than this svc knows (${known})`;
  return needs === newest
    ? `${base}: run the svc that migrated it, or a newer one`
    : `${base} and needs an svc of schema version ${needs} or newer: run the svc that migrated it, or a newer one`;
}
