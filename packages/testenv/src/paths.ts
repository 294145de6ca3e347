import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Root of baton's machine-local caches (built binaries, running test clusters).
 * `BATON_CACHE_DIR` overrides it, then `XDG_CACHE_HOME/baton`, then `~/.cache/baton`.
 */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BATON_CACHE_DIR) return env.BATON_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'baton');
}

/** Folder of the wrapper Go modules shipped with this package. */
export const goModulesDir = new URL('../go/', import.meta.url).pathname;
