/**
 * Scopes of profile REST API keys. profile:read reads snapshots without
 * plaintext personal data; profile:read:pii adds plaintext email, phone, name
 * and trait values; segment:read lists segment members and runs
 * profiles/query; webhooks:manage manages key-scoped webhook subscriptions.
 */
export const KEY_SCOPES = ['profile:read', 'profile:read:pii', 'segment:read', 'webhooks:manage'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

export const API_KEY_PREFIX = 'pls_live_';

export function isKeyScope(s: string): s is KeyScope {
  return (KEY_SCOPES as readonly string[]).includes(s);
}
