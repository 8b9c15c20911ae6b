import { describe, expect, it } from 'vitest';
import { adAttemptView, attemptView, attemptViewSchema, pickView } from '../../src/domain/webhooks/attempts.js';
import { deliveryLogEntrySchema } from '../../src/pulse/schemas.js';
import type { HealthRow } from '../../src/store/webhooks.js';

const row: HealthRow = {
  id: 7,
  site_id: 'site_1',
  integration: 'webhook',
  destination_id: 'dst_1',
  delivery_id: 'dlv_1',
  event_type: 'conversion',
  kind: 'attempt',
  attempt: 2,
  ok: 0,
  status: 503,
  latency_ms: 41,
  error_class: 'http_status',
  message: 'receiver answered 503',
  response_excerpt: 'busy',
  created_at: Date.UTC(2026, 10, 25, 12, 0, 0),
};

describe('the delivery-attempt view, declared once', () => {
  it('holds every field of a log row, in the order the CLI prints them', () => {
    expect(JSON.stringify(attemptView(row))).toBe(
      '{"id":7,"at":"2026-11-25T12:00:00.000Z","site_id":"site_1","destination_id":"dst_1","delivery_id":"dlv_1","event":"conversion","kind":"attempt","attempt":2,"ok":false,"status":503,"latency_ms":41,"error_class":"http_status","message":"receiver answered 503","response_excerpt":"busy"}',
    );
    expect(attemptViewSchema.safeParse(attemptView(row)).success).toBe(true);
  });

  it('the REST API picks its fields in the same order', () => {
    expect(JSON.stringify(pickView(attemptView(row), deliveryLogEntrySchema))).toBe(
      '{"at":"2026-11-25T12:00:00.000Z","delivery_id":"dlv_1","event":"conversion","kind":"attempt","attempt":2,"ok":false,"status":503,"latency_ms":41,"error_class":"http_status","message":"receiver answered 503"}',
    );
  });

  it('an ad-platform attempt names the connection, platform and job', () => {
    expect(JSON.stringify(adAttemptView({ ...row, integration: 'meta', ok: 1, delivery_id: null }))).toBe(
      '{"id":7,"at":"2026-11-25T12:00:00.000Z","site_id":"site_1","platform":"meta","connection_id":"dst_1","job_id":null,"attempt":2,"ok":true,"status":503,"latency_ms":41,"error_class":"http_status","message":"receiver answered 503","response_excerpt":"busy"}',
    );
  });
});
