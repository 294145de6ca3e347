import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  formatTrustedKeys,
  generateSigningKey,
  readSigningKeyFile,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  type SigningKey,
  writeSigningKeyFile,
} from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { type BuildSource, imageProvenance, SIGNATURE_ANNOTATIONS, signLayout } from '@baton/image';
import { createLocalSigstore, type KeylessSigner, type LocalSigstore } from './local-sigstore.js';
import { cacheRoot } from './paths.js';
import { attachToRegistry, putCosignV2Signature } from './registry.js';

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

/** How an image of baton's was built, for its SLSA provenance: the entry point and the checkout it was built from. */
export interface BedImageBuild {
  /** The bundled entry point, e.g. `packages/controller/src/main.ts`. */
  readonly entry: string;
  readonly source: BuildSource;
}

/**
 * Signs the images of an OCI layout with the bed's key, as a release signs baton's images (`pnpm image:build
 * --sign-key`): a cosign v3 signature attached as a referrer, which the bed's registry then serves with the image;
 * for one of baton's own images (`build`), also its signed SLSA provenance, as the release attaches it. Same key,
 * same commit, same bytes: beds signing one layout at once write the same files.
 */
export async function signBedImages(layoutDir: string, name: string, build?: BedImageBuild): Promise<void> {
  await signLayout(
    layoutDir,
    name,
    await bedImageKey(),
    build ? { provenance: (_, sbom) => imageProvenance(build.entry, build.source, sbom) } : {},
  );
}

/** The OIDC issuer of GitHub Actions, which upstream release workflows sign their images as (keyless). */
export const GITHUB_ACTIONS_ISSUER = 'https://token.actions.githubusercontent.com';

let sigstore: Promise<LocalSigstore> | undefined;

/**
 * The bed's private Sigstore (one per process: its trusted root is written by the same process that signs with it),
 * standing for the public Fulcio and Rekor that upstream's release workflows sign with.
 */
export function bedSigstore(): Promise<LocalSigstore> {
  sigstore ??= createLocalSigstore();
  return sigstore;
}

/**
 * Signs the image `subject` already pushed to the registry at `registryHost` keylessly, as a release workflow
 * running as `signer` does (`cosign sign` with the workflow's OIDC token): by default as cosign v3 does, a bundle
 * attached as a referrer; `cosign-v2`, as images signed before cosign v3 carry it, in the `sha256-<hex>.sig` tag.
 */
export async function signKeylessInRegistry(
  registryHost: string,
  repository: string,
  subject: string,
  name: string,
  signer: KeylessSigner,
  format: 'bundle' | 'cosign-v2' = 'bundle',
): Promise<void> {
  const sigstore = await bedSigstore();
  if (format === 'cosign-v2') {
    const { payload, annotations } = await sigstore.signImageCosignV2(name, subject, signer);
    await putCosignV2Signature(registryHost, repository, subject, payload, annotations);
    return;
  }
  const bundle = Buffer.from(JSON.stringify(await sigstore.signImage(name, subject, signer)));
  await attachToRegistry(registryHost, repository, subject, bundle, SIGSTORE_BUNDLE_MEDIA_TYPE, SIGNATURE_ANNOTATIONS);
}

/** A plan's `push.images` for a bed's images: trust the bed's key, read ghcr.io and the others at its registry. */
export interface BedImageTrust {
  /** The trusted-keys file written (absolute). */
  readonly trustedKeys: string;
  /** The bed Sigstore's trusted root written (absolute), for plans that trust keyless identities. */
  readonly trustedRoot: string;
  /** Each registry host the bed serves, at `http://<the bed's registry>`. */
  readonly mirrors: Readonly<Record<string, string>>;
}

/**
 * Writes `dir/image-keys.yaml` (the bed's image key as a trusted-keys file) and `dir/sigstore-root.json` (the bed
 * Sigstore's trusted root), and returns the `push.images` that makes
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
  const trustedRoot = join(dir, 'sigstore-root.json');
  await writeFile(trustedRoot, `${JSON.stringify((await bedSigstore()).trustedRoot, null, 2)}\n`);
  return {
    trustedKeys,
    trustedRoot,
    mirrors: Object.fromEntries(registries.map((r) => [r, `http://${registryHost}`])),
  };
}
