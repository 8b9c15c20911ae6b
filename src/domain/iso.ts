/** ISO 8601 of a millisecond timestamp (null stays null): how views show a stored time. */
export const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());
