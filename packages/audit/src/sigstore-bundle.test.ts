import { describe, expect, test } from 'vitest';
import { createHandoffEvent } from './handoff-event.js';
import { SigningKey } from './signing-key.js';
import { SIGSTORE_BUNDLE_MEDIA_TYPE, toSigstoreBundle, verifySigstoreBundle } from './sigstore-bundle.js';
import { synthRecords } from './synth.js';
import { sigstoreJsVerify } from './testing/sigstore-js.js';
import { TrustedKeySet } from './trusted-keys.js';

const key = SigningKey.fromSeed('baton.dev/handoff', Buffer.alloc(32, 3));
const other = SigningKey.fromSeed('baton.dev/handoff', Buffer.alloc(32, 4));
const keys = new TrustedKeySet({ origin: 'baton.dev/handoff', keys: [{ key: key.verifierKey }] });
const [record] = [...synthRecords(1, { seed: 8 })];

/** A bundle as JSON, to tamper with. */
type Bundle = { dsseEnvelope: { payload: string; payloadType: string; signatures: { sig: string }[] } };

const sigstoreVerify = (bundle: unknown) => sigstoreJsVerify(bundle, key);

describe('the handoff attestation as a Sigstore bundle', () => {
  test('is the audit event’s own envelope and signature, and sigstore-js verifies it with the trusted key', async () => {
    const event = await createHandoffEvent(record!, key);
    const bundle = toSigstoreBundle(event.data);
    expect(bundle.mediaType).toBe(SIGSTORE_BUNDLE_MEDIA_TYPE);
    expect(bundle.dsseEnvelope).toEqual(event.data);
    expect(() => sigstoreVerify(JSON.parse(JSON.stringify(bundle)))).not.toThrow();
    const ok = verifySigstoreBundle(bundle, keys, 'b.json');
    expect(ok.statement.predicateType).toBe('https://baton.dev/handoff/v1');
    expect(ok.key.verifierKey).toBe(key.verifierKey);
  });

  test.each([
    [
      'a changed payload',
      (b: Bundle) => {
        const st = JSON.parse(Buffer.from(b.dsseEnvelope.payload, 'base64').toString());
        st.predicate.outcome = 'handed-off';
        st.predicate.cluster.name = 'another';
        b.dsseEnvelope.payload = Buffer.from(JSON.stringify(st)).toString('base64');
      },
      /the signature does not verify/,
    ],
    [
      'a changed payload type',
      (b: Bundle) => {
        b.dsseEnvelope.payloadType = 'application/json';
      },
      /not an in-toto Statement/,
    ],
    [
      'a signature by another key under the trusted key’s hint',
      async (b: Bundle) => {
        const forged = await createHandoffEvent(record!, other);
        b.dsseEnvelope.signatures[0]!.sig = forged.data.signatures[0]!.sig;
      },
      /the signature does not verify/,
    ],
  ])('refuses %s (and so does sigstore-js)', async (_, tamper, message) => {
    const bundle = JSON.parse(JSON.stringify(toSigstoreBundle((await createHandoffEvent(record!, key)).data)));
    await tamper(bundle);
    expect(() => verifySigstoreBundle(bundle, keys, 'b.json')).toThrow(message);
    expect(() => sigstoreVerify(bundle)).toThrow();
  });

  test('an untrusted key or a key outside its window is refused, naming the file and the key', async () => {
    const bundle = toSigstoreBundle((await createHandoffEvent(record!, other)).data);
    expect(() => verifySigstoreBundle(bundle, keys, 'b.json')).toThrow(
      /^b\.json: signed by baton\.dev\/handoff\+[0-9a-f]{8}, which the trusted-keys file does not list/,
    );
    const expired = new TrustedKeySet({
      origin: 'o',
      keys: [{ key: key.verifierKey, validUntil: '2000-01-01T00:00:00Z' }],
    });
    const mine = toSigstoreBundle((await createHandoffEvent(record!, key)).data);
    expect(() => verifySigstoreBundle(mine, expired, 'b.json')).toThrow(/is not trusted at .*, when the run finished/);
    expect(() => verifySigstoreBundle({ mediaType: 'x' }, keys, 'b.json')).toThrow(
      /^b\.json: not a Sigstore bundle v0\.3/,
    );
  });
});
