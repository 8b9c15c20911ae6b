/**
 * The public library surface of svc, for Node webhook receivers: signature
 * verification and the event catalogue. Any new export added here becomes
 * public API.
 */
export { sign, verifySignature } from './webhooks/signing.js';
export { CATALOGUE, EVENT_TYPES, validatePayload, type EventType } from './webhooks/catalogue.js';
