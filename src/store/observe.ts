/** One committed group of the store's writer: what /metrics and tests read. */
/**
 * One committed group. `mode` (PostgreSQL): `set_based` when its operations ran concurrently with
 * batched statements (pg/batch.ts), `in_turn` when one after another (unkeyed operations, a group of one),
 * `rerun` when run in turn after its set-based pass was rolled back (an operation failed or lost a race),
 * `autocommit` for operations of one statement each run without a transaction (WriteOptions.oneStatement).
 */
export interface GroupCommitInfo {
  backend: 'sqlite' | 'pg';
  operations: number;
  roundTrips: number;
  durationMs: number;
  mode?: 'set_based' | 'in_turn' | 'rerun' | 'autocommit';
}
export type GroupCommitListener = (info: GroupCommitInfo) => void;
