/** Body caps of the ingestion endpoints, in bytes of the raw request body. */
export const BODY_LIMITS = {
  '/api/identify': 32 * 1024,
  '/api/convert': 64 * 1024,
  '/api/lead/capture': 16 * 1024,
  '/api/events': 64 * 1024,
  '/api/score': 64 * 1024,
} as const;

export type IngestPath = keyof typeof BODY_LIMITS;
