import { describe, expect, test } from 'vitest';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from './dsse.js';
import {
  attestImage,
  COSIGN_SIGN_PREDICATE_TYPE,
  imageSignatureStatement,
  signImage,
  verifyImageSignature,
} from './image-signature.js';
import { SigningKey } from './signing-key.js';
import { SIGSTORE_BUNDLE_MEDIA_TYPE, toSigstoreBundle } from './sigstore-bundle.js';
import { sigstoreJsVerify } from './testing/sigstore-js.js';
import { TrustedKeySet } from './trusted-keys.js';

const release = SigningKey.fromSeed('baton.dev/release', Buffer.alloc(32, 7));
const stranger = SigningKey.fromSeed('baton.dev/release', Buffer.alloc(32, 8));
const trusted = new TrustedKeySet({ origin: 'baton.dev/release', keys: [{ key: release.verifierKey }] });
const IMAGE = 'ghcr.io/baton-dev/baton-controller';
const DIGEST = `sha256:${'ab'.repeat(32)}`;
const OTHER = `sha256:${'cd'.repeat(32)}`;

describe('an image signature (cosign v3: a DSSE in-toto statement in a Sigstore bundle)', () => {
  test('signs the manifest digest with an empty predicate, and sigstore-js and baton verify it', async () => {
    const bundle = await signImage(IMAGE, DIGEST, release);
    expect(bundle.mediaType).toBe(SIGSTORE_BUNDLE_MEDIA_TYPE);
    const statement = JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString());
    expect(statement).toEqual({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: IMAGE, digest: { sha256: 'ab'.repeat(32) } }],
      predicateType: COSIGN_SIGN_PREDICATE_TYPE,
      predicate: {},
    });
    expect(() => sigstoreJsVerify(bundle, release)).not.toThrow();
    expect(verifyImageSignature(bundle, DIGEST, trusted, 'sig').key.verifierKey).toBe(release.verifierKey);
  });

  test('is the same bytes every time (Ed25519 is deterministic): a rebuilt image layout is identical', async () => {
    expect(JSON.stringify(await signImage(IMAGE, DIGEST, release))).toBe(
      JSON.stringify(await signImage(IMAGE, DIGEST, release)),
    );
  });

  test('refuses a signature of another image, naming both digests', async () => {
    const bundle = await signImage(IMAGE, OTHER, release);
    expect(() => verifyImageSignature(bundle, DIGEST, trusted, 'x@sha256:ab… signature')).toThrow(
      `x@sha256:ab… signature: signs ${OTHER}, not ${DIGEST}: a signature of another image`,
    );
  });

  test('refuses a key the policy does not trust', async () => {
    const bundle = await signImage(IMAGE, DIGEST, stranger);
    expect(() => verifyImageSignature(bundle, DIGEST, trusted, 'sig')).toThrow(
      /sig: signed by baton\.dev\/release\+[0-9a-f]{8}, which the trusted-keys file does not list/,
    );
  });

  test('refuses a statement changed after signing (the subject moved to another digest)', async () => {
    const bundle = await signImage(IMAGE, OTHER, release);
    const st = JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString());
    st.subject[0].digest.sha256 = 'ab'.repeat(32);
    const forged = {
      ...bundle,
      dsseEnvelope: { ...bundle.dsseEnvelope, payload: Buffer.from(JSON.stringify(st)).toString('base64') },
    };
    expect(() => verifyImageSignature(forged, DIGEST, trusted, 'sig')).toThrow(/does not verify/);
  });

  test('refuses a signed statement of another kind (an attestation is not a signature)', async () => {
    const st = JSON.parse(imageSignatureStatement(IMAGE, DIGEST).toString());
    st.predicateType = 'https://slsa.dev/provenance/v1';
    const bundle = toSigstoreBundle(
      await signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(JSON.stringify(st)), [release]),
    );
    expect(() => verifyImageSignature(bundle, DIGEST, trusted, 'sig')).toThrow(
      'sig: a https://slsa.dev/provenance/v1 statement, not an image signature (https://sigstore.dev/cosign/sign/v1)',
    );
  });

  test('refuses a digest that is not sha256 when signing', () => {
    expect(() => imageSignatureStatement(IMAGE, 'sha512:00')).toThrow('not a sha256 digest: sha512:00');
  });

  test('an attestation (cosign attest): the same subject, its own predicate, and sigstore-js verifies it', async () => {
    const bundle = await attestImage(IMAGE, DIGEST, 'https://slsa.dev/provenance/v1', { buildDefinition: {} }, release);
    const statement = JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString());
    expect(statement).toEqual({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: IMAGE, digest: { sha256: 'ab'.repeat(32) } }],
      predicateType: 'https://slsa.dev/provenance/v1',
      predicate: { buildDefinition: {} },
    });
    expect(() => sigstoreJsVerify(bundle, release)).not.toThrow();
    await expect(attestImage(IMAGE, 'latest', 'x', {}, release)).rejects.toThrow('not a sha256 digest: latest');
  });
});
