import { existsSync, readFileSync } from 'node:fs';
import { ConfigError } from '@baton/errors';

/**
 * `job-image.json`, written by `pnpm image:build --pin`: beside the CLI's bundle, which copies it there
 * (packages/cli/build/bundle.ts), or beside this package's `src/` and `dist/`.
 */
const FILES = [new URL('./job-image.json', import.meta.url), new URL('../../job-image.json', import.meta.url)];

/**
 * The image the Job engine's shard pods run when the fleet file names none: the baton CLI image this release pins by
 * digest (`ghcr.io/baton-dev/baton@sha256:…`). Read at run time, never bundled: the image holds this code, so its
 * digest cannot be in it.
 * @throws ConfigError when the file is missing or holds no pinned image (a broken install).
 */
export function defaultShardImage(): string {
  const file = FILES.find((f) => existsSync(f)) ?? FILES[FILES.length - 1]!;
  try {
    const { image } = JSON.parse(readFileSync(file, 'utf8')) as { image?: unknown };
    if (typeof image === 'string' && /^ghcr\.io\/baton-dev\/baton@sha256:[0-9a-f]{64}$/.test(image)) return image;
  } catch {}
  throw new ConfigError(
    `${file.pathname}: no pinned baton image (ghcr.io/baton-dev/baton@sha256:…); set job.image in the fleet file, or reinstall @baton/fleet`,
  );
}
