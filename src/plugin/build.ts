import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { AppError } from '../errors/app-error.js';
import { copyDrift } from './validate.js';

/**
 * Writes plugin/skills as a copy of skills/ (the source of truth). A copy,
 * not a symlink: `npm pack` leaves symlinks out of the tarball, a checkout
 * without symlink support gets a text file, and the SDK's skills loader
 * refuses symlinked files. The copy is committed, so `/plugin install` works
 * from a bare clone; `svc plugin validate` fails when it is stale. Returns
 * the files that changed.
 */
export function buildPluginSkills(root: string): string[] {
  if (!existsSync(path.join(root, 'skills')) || !existsSync(path.join(root, 'plugin'))) {
    throw new AppError('not_found', `${root} is not the svc repository root: it needs skills/ and plugin/ (--root)`);
  }
  const changed = copyDrift(root);
  const dst = path.join(root, 'plugin', 'skills');
  if (existsSync(dst)) rmSync(dst, { recursive: true, force: true });
  cpSync(path.join(root, 'skills'), dst, { recursive: true });
  return changed;
}
