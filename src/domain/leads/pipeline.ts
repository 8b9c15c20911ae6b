/** The statuses of a lead in the pipeline. */
export const LEAD_STATUSES = ['new', 'working', 'qualified', 'won', 'lost', 'unworkable'] as const;
export type LeadStatus = (typeof LEAD_STATUSES)[number];

export function isLeadStatus(s: string): s is LeadStatus {
  return (LEAD_STATUSES as readonly string[]).includes(s);
}

/**
 * Allowed moves. Staying in the same status is always allowed (a no-op).
 * - new: captured, not worked yet.
 * - working: someone is working it (calling, mailing).
 * - qualified: a real opportunity.
 * - won / lost: closed. A lost lead can be reopened (back to working); won is final.
 * - unworkable: no usable contact value (captured without one, or the number is wrong).
 *   It can go back to working once a contact value exists; it can be closed as lost.
 * A lead captured with no contact value at all (workable = false) cannot be moved into
 * working, qualified or won: there is nobody to work it with.
 */
export const LEAD_TRANSITIONS: Readonly<Record<LeadStatus, readonly LeadStatus[]>> = {
  new: ['working', 'qualified', 'won', 'lost', 'unworkable'],
  working: ['qualified', 'won', 'lost', 'unworkable'],
  qualified: ['working', 'won', 'lost', 'unworkable'],
  won: [],
  lost: ['working'],
  unworkable: ['working', 'lost'],
};

const NEEDS_CONTACT: ReadonlySet<LeadStatus> = new Set(['working', 'qualified', 'won']);

export type TransitionCheck = { ok: true } | { ok: false; reason: string };

/** Whether a lead in `from` (with or without a contact value) may move to `to`. */
export function checkTransition(from: string, to: LeadStatus, workable: boolean): TransitionCheck {
  if (from === to) return { ok: true };
  const allowed = isLeadStatus(from) ? LEAD_TRANSITIONS[from] : LEAD_STATUSES; // an unknown stored status may move anywhere
  if (!allowed.includes(to)) {
    return { ok: false, reason: `a ${from} lead cannot move to ${to} (allowed: ${allowed.length > 0 ? allowed.join(', ') : 'none, it is closed'})` };
  }
  if (!workable && NEEDS_CONTACT.has(to)) return { ok: false, reason: `the lead has no contact value, so it cannot be ${to}` };
  return { ok: true };
}
