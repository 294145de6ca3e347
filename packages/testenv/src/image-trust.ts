import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  formatTrustedKeys,
  generateSigningKey,
  readSigningKeyFile,
  type SigningKey,
  writeSigningKeyFile,
} from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { signLayout } from '@baton/image';
import { cacheRoot } from './paths.js';

/** The name of the test bed's image-signing key: it stands for a release key, and signs nothing else. */
export const BED_IMAGE_KEY_NAME = 'testenv.baton.dev/images';

/** Where the bed's image-signing key lives: one per machine cache, so every bed's images carry the same signature. */
export function bedImageKeyPath(): string {
  return join(cacheRoot(), 'image', 'bed-images.key');
}

let key: Promise<SigningKey> | undefined;

/** The bed's image-signing key, made the first time any bed needs it (0600; a racing maker's file wins). */
export function bedImageKey(): Promise<SigningKey> {
  key ??= (async () => {
    const path = bedImageKeyPath();
    await mkdir(dirname(path), { recursive: true });
    await writeSigningKeyFile(path, generateSigningKey(BED_IMAGE_KEY_NAME)).catch((err: unknown) => {
      if (!(err instanceof ConfigError && /already exists/.test(err.message))) throw err;
    });
    return readSigningKeyFile(path);
  })().catch((err: unknown) => {
    key = undefined;
    throw err;
  });
  return key;
}

/**
 * Signs the images of an OCI layout with the bed's key, as a release signs baton's images (`pnpm image:build
 * --sign-key`): a cosign v3 signature attached as a referrer, which the bed's registry then serves with the image.
 * Same key, same bytes: beds signing one layout at once write the same files.
 */
export async function signBedImages(layoutDir: string, name: string): Promise<void> {
  await signLayout(layoutDir, name, await bedImageKey());
}

/** A plan's `push.images` for a bed's images: trust the bed's key, read ghcr.io and the others at its registry. */
export interface BedImageTrust {
  /** The trusted-keys file written (absolute). */
  readonly trustedKeys: string;
  /** Each registry host the bed serves, at `http://<the bed's registry>`. */
  readonly mirrors: Readonly<Record<string, string>>;
}

/**
 * Writes `dir/image-keys.yaml` (the bed's image key as a trusted-keys file) and returns the `push.images` that makes
 * `baton up` verify the pushed images' signatures in the bed's registry, which stands in for ghcr.io and the others.
 */
export async function writeBedImageTrust(
  dir: string,
  registryHost: string,
  registries: readonly string[],
): Promise<BedImageTrust> {
  const trustedKeys = join(dir, 'image-keys.yaml');
  const k = await bedImageKey();
  await writeFile(trustedKeys, formatTrustedKeys({ origin: BED_IMAGE_KEY_NAME, keys: [{ key: k.verifierKey }] }));
  return { trustedKeys, mirrors: Object.fromEntries(registries.map((r) => [r, `http://${registryHost}`])) };
}
