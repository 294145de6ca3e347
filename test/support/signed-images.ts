import { join } from 'node:path';
import { SIGSTORE_BUNDLE_MEDIA_TYPE, SigningKey, signImage } from '@baton/audit';
import { manifestBlobs, referrerManifest, SIGNATURE_ANNOTATIONS, signLayout, writeLayout } from '@baton/image';
import {
  createLocalSigstore,
  type LocalRegistry,
  type LocalSigstore,
  startRegistry,
  type TestImage,
  writeTestImage,
} from '@baton/testenv/images';

/** The release key of {@link startSignedImageRegistry}'s images, and a key nobody trusts. */
export const RELEASE_KEY = SigningKey.fromSeed('baton.dev/release', Buffer.alloc(32, 1));
export const STRANGER_KEY = SigningKey.fromSeed('baton.dev/release', Buffer.alloc(32, 2));

/** The release workflow that signs {@link startSignedImageRegistry}'s keyless image, and its GitHub Actions issuer. */
export const RELEASE_WORKFLOW = {
  issuer: 'https://token.actions.githubusercontent.com',
  subject: 'https://github.com/example/app/.github/workflows/release.yml@refs/tags/v1.2.3',
} as const;

/** Five one-layer images in `repository` of a real registry on loopback, each pinned by digest. */
export interface SignedImageRegistry {
  readonly registry: LocalRegistry;
  readonly repository: string;
  /**
   * signed: by RELEASE_KEY; unsigned; stranger: by STRANGER_KEY; borrowed: carries the signed image's signature;
   * keyless: by RELEASE_WORKFLOW through `sigstore`, attached after the push.
   */
  readonly digests: Readonly<Record<'signed' | 'unsigned' | 'stranger' | 'borrowed' | 'keyless', string>>;
  /** The private Sigstore that signed the keyless image (its trustedRoot is what a keyless policy names). */
  readonly sigstore: LocalSigstore;
  /** Writes a one-layer image layout tagged `tag` (another content, another digest). */
  layout(tag: string, content: string): TestImage;
}

/**
 * Starts Debian's docker-registry (Distribution 2.8, no referrers API: signatures go through the referrers tag) in
 * `dir` and pushes the four images to `repository`.
 */
export async function startSignedImageRegistry(dir: string, repository: string): Promise<SignedImageRegistry> {
  const registry = await startRegistry({ dir: join(dir, 'registry') });
  const name = `ghcr.io/${repository}`;
  const layout = (tag: string, content: string) => writeTestImage(dir, tag, content);
  try {
    const signed = layout('signed', 'one');
    await signLayout(signed.layout, name, RELEASE_KEY);
    const byStranger = layout('stranger', 'three');
    await signLayout(byStranger.layout, name, STRANGER_KEY);
    // A valid signature of the signed image, attached to another image: what copying a signature across gives.
    const borrowed = layout('borrowed', 'four');
    const blobs = join(dir, 'cache-borrowed', 'blobs');
    const bundle = Buffer.from(JSON.stringify(await signImage(name, signed.image.digest, RELEASE_KEY)));
    const referrer = referrerManifest(blobs, borrowed.image, bundle, SIGSTORE_BUNDLE_MEDIA_TYPE, {
      annotations: SIGNATURE_ANNOTATIONS,
    });
    const tagged = { ...borrowed.image, annotations: { 'org.opencontainers.image.ref.name': 'borrowed' } };
    writeLayout(
      borrowed.layout,
      blobs,
      [tagged, referrer],
      [...manifestBlobs(blobs, borrowed.image), ...manifestBlobs(blobs, referrer)],
    );
    const sigstore = await createLocalSigstore();
    const keyless = await registry.push(layout('keyless', 'five').layout, repository, 'keyless');
    const keylessBundle = await sigstore.signImage(name, keyless, RELEASE_WORKFLOW);
    await registry.attach(
      repository,
      keyless,
      Buffer.from(JSON.stringify(keylessBundle)),
      SIGSTORE_BUNDLE_MEDIA_TYPE,
      SIGNATURE_ANNOTATIONS,
    );
    const digests = {
      keyless,
      signed: await registry.push(signed.layout, repository, 'signed'),
      unsigned: await registry.push(layout('unsigned', 'two').layout, repository, 'unsigned'),
      stranger: await registry.push(byStranger.layout, repository, 'stranger'),
      borrowed: await registry.push(borrowed.layout, repository, 'borrowed'),
    };
    return { registry, repository, digests, layout, sigstore };
  } catch (err) {
    await registry.stop();
    throw err;
  }
}
