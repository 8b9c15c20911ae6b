import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);

/**
 * The better-sqlite3 constructor for this Node.js. better-sqlite3 12 (what Node 20 runs) aborts the process on
 * Node 24 (`Assertion failed: (env) != nullptr` in RemoveEnvironmentCleanupHook, when a garbage-collected
 * statement is finalized: Node 24's ObjectWrap changed); better-sqlite3 13 is built on Node-API and fixes it, but
 * needs Node 22 or later. So both are installed (13 as an optional dependency, under the alias
 * `better-sqlite3-napi`, with the prebuilt binaries it ships) and Node 24 and later load 13; same API, same file
 * format.
 */
function load(): typeof BetterSqlite3 {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= 24) {
    try {
      return require('better-sqlite3-napi') as typeof BetterSqlite3;
    } catch (err) {
      throw new Error(
        `svc on Node.js ${process.versions.node} needs better-sqlite3 13 (the optional dependency better-sqlite3-napi), which is not installed: ` +
          `${err instanceof Error ? err.message : String(err)}. Run npm install again with this Node.js, or use Node.js 20 or 22.`,
      );
    }
  }
  return require('better-sqlite3') as typeof BetterSqlite3;
}

export const Database: typeof BetterSqlite3 = load();
