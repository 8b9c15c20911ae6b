/** One committed group of the store's writer: what /metrics and tests read. */
export interface GroupCommitInfo { backend: 'sqlite' | 'pg'; operations: number; roundTrips: number; durationMs: number }
export type GroupCommitListener = (info: GroupCommitInfo) => void;
