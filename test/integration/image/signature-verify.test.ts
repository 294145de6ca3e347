import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SIGSTORE_BUNDLE_MEDIA_TYPE, type SigningKey, TrustedKeySet } from '@baton/audit';
import { type ImageTrustPolicy, RegistryClient, verifyImages } from '@baton/core';
import { ImageVerifyError } from '@baton/errors';
import { MEDIA_TYPE, SIGNATURE_ANNOTATIONS, signLayout } from '@baton/image';
import { freePorts, type LocalRegistry } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RELEASE_KEY,
  type SignedImageRegistry,
  STRANGER_KEY,
  startSignedImageRegistry,
} from '../../support/signed-images.js';

// baton's check of an image's signature before anything is minted, against a real registry (Debian's Distribution
// 2.8, which has no referrers API: signatures are found through the referrers tag schema, as cosign finds them).
// The images stand for `ghcr.io/example/app`: the operator reads ghcr.io through a mirror (push.images.mirrors).

const policyOf = (key: SigningKey): ImageTrustPolicy => ({
  source: 'profile app: imageTrust',
  keys: new TrustedKeySet({ origin: 'baton.dev/release', keys: [{ key: key.verifierKey }] }),
});

let images: SignedImageRegistry;
let registry: LocalRegistry;
let dir: string;
let client: RegistryClient;
let digests: SignedImageRegistry['digests'];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-sigverify-'));
  images = await startSignedImageRegistry(dir, 'example/app');
  ({ registry, digests } = images);
  client = new RegistryClient({ mirrors: { 'ghcr.io': `http://${registry.host}` } });
}, 120_000);

afterAll(async () => {
  await registry?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const ref = (which: keyof SignedImageRegistry['digests']) => `ghcr.io/example/app@${digests[which]}`;
const refusal = async (images: string[], policy = policyOf(RELEASE_KEY), c = client) => {
  const err = await verifyImages(images, policy, c).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ImageVerifyError);
  return (err as Error).message;
};

describe('verifying pinned images before the push, from their registry', () => {
  it('accepts an image signed by a trusted key, found through the referrers tag, and says which key and signature', async () => {
    const [v] = await verifyImages([ref('signed'), ref('signed')], policyOf(RELEASE_KEY), client);
    expect(v).toMatchObject({ image: ref('signed'), digest: digests.signed, signedBy: RELEASE_KEY.verifierKey });
    const listed = await client.referrers(
      { text: ref('signed'), registry: 'ghcr.io', repository: 'example/app', digest: digests.signed },
      digests.signed,
      SIGSTORE_BUNDLE_MEDIA_TYPE,
    );
    expect(listed.map((d) => d.digest)).toEqual([v!.signature]);
    expect(listed[0]!.annotations).toEqual(SIGNATURE_ANNOTATIONS);
  });

  it('refuses an unsigned image, naming the image, the registry read and the two ways on', async () => {
    expect(await refusal([ref('signed'), ref('unsigned')])).toBe(
      `image ${ref('unsigned')}: unsigned: http://${registry.host} lists no signature (Sigstore bundle referrer) of ${digests.unsigned}; sign it (cosign sign --key, pnpm image:build --sign-key) or pass --insecure-skip-image-verify to push it unverified (recorded in the audit event)`,
    );
  });

  it('refuses an image signed by a key the policy does not trust', async () => {
    expect(await refusal([ref('stranger')])).toMatch(
      new RegExp(
        `^image ${ref('stranger')}: no signature verifies with the keys of profile app: imageTrust: signature sha256:[0-9a-f]{64}: signed by baton\\.dev/release\\+${STRANGER_KEY.keyId.toString('hex')}, which the trusted-keys file does not list;`,
      ),
    );
  });

  it("refuses a valid signature of another image's digest attached to this one", async () => {
    expect(await refusal([ref('borrowed')])).toContain(
      `signs ${digests.signed}, not ${digests.borrowed}: a signature of another image`,
    );
  });

  it('refuses an image pinned by tag: only a digest can be verified', async () => {
    expect(await refusal(['ghcr.io/example/app:signed'])).toBe(
      'image ghcr.io/example/app:signed: pinned by tag, and profile app: imageTrust verifies digests: pin it as ghcr.io/example/app:signed@sha256:<digest> (the digest the signature names)',
    );
  });

  it('refuses when the registry cannot be reached, naming where it looked and the fix', async () => {
    const [port] = await freePorts(1);
    const offline = new RegistryClient({ mirrors: { 'ghcr.io': `http://127.0.0.1:${port}` } });
    expect(await refusal([ref('signed')], policyOf(RELEASE_KEY), offline)).toBe(
      `image ${ref('signed')}: cannot read its signatures: cannot reach http://127.0.0.1:${port}: ECONNREFUSED; check the operator's network access to ghcr.io, or name a mirror that serves it (push.images.mirrors), or pass --insecure-skip-image-verify to push it unverified (recorded in the audit event)`,
    );
  });

  it('lists a signature once when an image and its signature are pushed again', async () => {
    const { layout } = images.layout('signed', 'one');
    await signLayout(layout, 'ghcr.io/example/app', RELEASE_KEY);
    await registry.push(layout, 'example/app', 'signed');
    const res = await fetch(`http://${registry.host}/v2/example/app/manifests/${digests.signed.replace(':', '-')}`, {
      headers: { accept: MEDIA_TYPE.index },
    });
    expect(((await res.json()) as { manifests: unknown[] }).manifests).toHaveLength(1);
  });
});
