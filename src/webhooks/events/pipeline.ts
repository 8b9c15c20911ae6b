import { z } from 'zod';
import { count, defineEvent, id, idOrNull, siteId, timestamp } from './define.js';

const at = '2025-06-02T09:30:00.000Z';

/** trigger.fired: ids only, never a contact value. */
export const triggerFired = defineEvent({
  id: 'TriggerFiredEvent',
  description: 'A triggered message is actually sent (successful fires only).',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('trigger.fired'),
    site_id: siteId,
    fire_id: id('This fire of the trigger.'),
    trigger_id: id('The trigger that fired.'),
    message_id: id('The message that was sent.'),
    profile_id: id('The profile the message was sent to.'),
    timestamp,
  }),
  example: {
    event: 'trigger.fired',
    site_id: 'site_example',
    fire_id: 'fire_00mbx2k1a3f9c2d4e5f6a7b8',
    trigger_id: 'trg_cart_reminder',
    message_id: 'msg_cart_reminder_v2',
    profile_id: 'prf_00mbx2k1a3f9c2d4e5f6a7b8',
    timestamp: at,
  },
});

/** lead.captured: lead id and form id, no personal values (the payload /api/lead/capture writes). */
export const leadCaptured = defineEvent({
  id: 'LeadCapturedEvent',
  description: 'A lead is captured (distinct from profile.identified; carries no personal values).',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('lead.captured'),
    site_id: siteId,
    lead_id: id('The captured lead.'),
    form_id: id('The form the lead came from.'),
    kind: z.enum(['lead_form', 'optin']).describe('lead_form, or optin for a newsletter/opt-in capture.'),
    profile_id: id('The profile the lead is attached to.'),
    workable: z.boolean().describe('Whether the lead carries at least one contact value to work it with.'),
    timestamp,
  }),
  example: {
    event: 'lead.captured',
    site_id: 'site_example',
    lead_id: 'lead_00mbx2k1a3f9c2d4e5f6a7b8',
    form_id: 'demo_request',
    kind: 'lead_form',
    profile_id: 'prf_00mbx2k1a3f9c2d4e5f6a7b8',
    workable: true,
    timestamp: at,
  },
});

/** Outcomes a voice call can be mapped to. */
export const CALL_OUTCOMES = [
  'connected',
  'interested',
  'booked',
  'callback_requested',
  'qualified',
  'not_interested',
  'no_answer',
  'voicemail',
  'wrong_number',
  'no_contact',
  'other',
] as const;

/** call.completed: call id, outcome and parsed callback time; no caller values, no transcript. */
export const callCompleted = defineEvent({
  id: 'CallCompletedEvent',
  description: 'A voice call is mapped into the pipeline.',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('call.completed'),
    site_id: siteId,
    call_id: id('The call.'),
    lead_id: idOrNull('The lead the call was mapped to.'),
    profile_id: idOrNull('The profile the call was mapped to.'),
    outcome: z.enum(CALL_OUTCOMES).describe('What the call came to.'),
    callback_at: z.iso
      .datetime({ offset: true })
      .nullable()
      .describe('Callback date and time parsed from the call, ISO 8601; null when none was agreed.'),
    duration_seconds: count('Length of the call in seconds.'),
    timestamp,
  }),
  example: {
    event: 'call.completed',
    site_id: 'site_example',
    call_id: 'call_00mbx2k1a3f9c2d4e5f6a7b8',
    lead_id: 'lead_00mbx2k1a3f9c2d4e5f6a7b8',
    profile_id: 'prf_00mbx2k1a3f9c2d4e5f6a7b8',
    outcome: 'callback_requested',
    callback_at: '2025-06-04T15:00:00+02:00',
    duration_seconds: 184,
    timestamp: at,
  },
});
