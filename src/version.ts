import { existsSync, readFileSync } from 'node:fs';

/**
 * The package's package.json: one folder up from src/ and dist/ (src/version.ts, dist/version.js), two from
 * the CLI bundle's chunks (dist/bundle/*.js).
 */
function packageJsonUrl(): URL {
  const near = new URL('../package.json', import.meta.url);
  return existsSync(near) ? near : new URL('../../package.json', import.meta.url);
}

const pkg = JSON.parse(readFileSync(packageJsonUrl(), 'utf8')) as { name: string; version: string; license: string };

/** The npm package name (scoped: the bare `svc` on the registry is someone else's). The command it installs is `svc`. */
export const PACKAGE_NAME: string = pkg.name;

/** The package version, read once from package.json. */
export const VERSION: string = pkg.version;

/** The package's SPDX license identifier; openapi.json states the same. */
export const LICENSE: string = pkg.license;
