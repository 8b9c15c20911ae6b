/**
 * The public ids of stored events and scores: their row id behind a type
 * prefix. /api/events and /api/score answer them, webhook payloads carry them
 * and every MCP tool shows them in this one form (`evt_1502`, never `1502`).
 */
export function eventId(rowId: number | string): string {
  return `evt_${rowId}`;
}

/** The public id of a stored score (`scr_88`). */
export function scoreId(rowId: number | string): string {
  return `scr_${rowId}`;
}
