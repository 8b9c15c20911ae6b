import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The maintained list of free-mail provider domains (`email-providers`, ~8,700 names). */
const MAINTAINED = require('email-providers/all.json') as string[];

/** Free-mail services the maintained list misses. */
const OURS = ['proton.me', 'pm.me', 'hey.com', 'fastmail.com', 'fastmail.fm', 'tuta.io', 'tutanota.com', 'tutanota.de', 'duck.com', 'zohomail.com', 'skiff.com'];

/**
 * False positives of the maintained list: domains it names that are not
 * free-mail services. The RFC 2606 documentation domains are listed there
 * (someone once sent mail from them) but stand for "a company" everywhere.
 */
const NOT_FREE_MAIL = new Set(['example.com', 'example.net', 'example.org']);

const FREE_MAIL: ReadonlySet<string> = new Set([...MAINTAINED.map((d) => d.toLowerCase()), ...OURS].filter((d) => !NOT_FREE_MAIL.has(d)));

/** Whether a lower-case ASCII host or registrable domain is a free-mail provider (never a company key). */
export function isFreeMailDomain(host: string): boolean {
  return FREE_MAIL.has(host);
}
