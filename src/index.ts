/**
 * The public library surface of svc, for Node webhook receivers: signature
 * verification under both schemes (svc's X-SVC-Signature and Standard
 * Webhooks) and the event catalogue. Any new export added here becomes
 * public API.
 */
export { sign, verifySignature } from './outbound/signing.js';
export { toStandardSecret, verifyStandardSignature, type StandardFailure, type StandardVerification } from './outbound/standard.js';
export { verifyWebhook, type WebhookHeaders, type WebhookScheme, type WebhookVerification } from './webhooks/verify.js';
export { CATALOGUE, EVENT_TYPES, validatePayload, type EventType } from './webhooks/catalogue.js';
