import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConfigError } from '@baton/errors';
import { z } from 'zod';
import { type DsseEnvelope, DsseEnvelopeSchema, IN_TOTO_PAYLOAD_TYPE, preAuthEncoding } from './dsse.js';
import { decodeStrictBase64, verifyEd25519 } from './signing-key.js';
import { IN_TOTO_STATEMENT_TYPE } from './statement.js';
import { isKeyValidAt, type TrustedKey, type TrustedKeySet } from './trusted-keys.js';

/** The media type of a Sigstore bundle v0.3 (what cosign v3 and sigstore-go read). */
export const SIGSTORE_BUNDLE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';

/**
 * A Sigstore bundle v0.3 around a DSSE envelope, verified by a public key (no certificate, no transparency log
 * entry): the form `cosign verify-blob-attestation --bundle … --key …` takes. The bundle format allows one signature.
 */
export const SigstoreBundleSchema = z
  .looseObject({
    mediaType: z.literal(SIGSTORE_BUNDLE_MEDIA_TYPE),
    verificationMaterial: z.looseObject({
      publicKey: z.strictObject({ hint: z.string().min(1).describe('the DSSE keyid: name+hex(key ID)') }),
      tlogEntries: z.array(z.unknown()).default([]),
      timestampVerificationData: z.looseObject({ rfc3161Timestamps: z.array(z.unknown()).default([]) }).optional(),
    }),
    dsseEnvelope: DsseEnvelopeSchema.refine((e) => e.signatures.length === 1, {
      message: 'a Sigstore bundle carries exactly one DSSE signature',
    }),
  })
  .describe('Sigstore bundle v0.3 (public key, DSSE)');

/** A Sigstore bundle v0.3 with a DSSE envelope. */
export type SigstoreBundle = z.infer<typeof SigstoreBundleSchema>;

/**
 * The Sigstore bundle of a signed envelope (an audit event's `data`): the same payload and signature, so the bundle
 * and the log entry are two views of one signature. During a key rotation the envelope carries two signatures and
 * the bundle the first, the current key's.
 */
export function toSigstoreBundle(envelope: DsseEnvelope): SigstoreBundle {
  const [first] = envelope.signatures;
  if (!first) throw new RangeError('an envelope without signatures has no bundle');
  return {
    mediaType: SIGSTORE_BUNDLE_MEDIA_TYPE,
    verificationMaterial: {
      publicKey: { hint: first.keyid },
      tlogEntries: [],
      timestampVerificationData: { rfc3161Timestamps: [] },
    },
    dsseEnvelope: { payload: envelope.payload, payloadType: envelope.payloadType, signatures: [first] },
  };
}

/** Where an event's bundle goes: `<log>.bundles/<event id>.sigstore.json`, beside `<log>.checkpoints/`. */
export function bundlePath(logPath: string, eventId: string): string {
  return join(`${logPath}.bundles`, `${eventId.replace(/[^A-Za-z0-9._-]/g, '_')}.sigstore.json`);
}

/**
 * Writes an event's bundle beside its log (atomically: a reader never sees half a bundle) and returns its path.
 * The log entry stays the record; the bundle is the same signature in the form standard tools read.
 */
export async function writeSigstoreBundle(logPath: string, eventId: string, envelope: DsseEnvelope): Promise<string> {
  const path = bundlePath(logPath, eventId);
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, `${JSON.stringify(toSigstoreBundle(envelope), null, 2)}\n`);
  await rename(tmp, path);
  return path;
}

/** What a verified bundle vouches for. */
export interface VerifiedBundle {
  /** The in-toto Statement, parsed. */
  readonly statement: { readonly predicateType: string; readonly subject: unknown[]; readonly predicate: unknown };
  /** The trusted key whose signature verified. */
  readonly key: TrustedKey;
}

/**
 * Verifies a Sigstore bundle of a handoff (or fleet) attestation against a trusted-keys file: the DSSE signature
 * over PAE with a trusted key the hint names, valid when the statement says the run finished.
 * @param file where the bundle came from, for messages.
 * @throws {ConfigError} naming the file and what failed.
 */
export function verifySigstoreBundle(input: unknown, keys: TrustedKeySet, file: string): VerifiedBundle {
  const parsed = SigstoreBundleSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(
      `${file}: not a Sigstore bundle v0.3 of a DSSE envelope: ${issue.path.join('.')}: ${issue.message}`,
    );
  }
  const { dsseEnvelope: env, verificationMaterial } = parsed.data;
  if (env.payloadType !== IN_TOTO_PAYLOAD_TYPE)
    throw new ConfigError(`${file}: the payload is ${env.payloadType}, not an in-toto Statement`);
  const payload = decodeStrictBase64(env.payload);
  const sig = decodeStrictBase64(env.signatures[0]!.sig);
  if (!payload || !sig) throw new ConfigError(`${file}: the payload or signature is not canonical base64`);
  const hint = verificationMaterial.publicKey.hint;
  const candidates = keys.forDsseKeyId(hint);
  if (candidates.length === 0)
    throw new ConfigError(`${file}: signed by ${hint}, which the trusted-keys file does not list`);
  const pae = preAuthEncoding(env.payloadType, payload);
  const statement = JSON.parse(payload.toString('utf8')) as VerifiedBundle['statement'] & { _type?: string };
  const key = candidates.find((k) => verifyEd25519(k.keyObject, pae, sig));
  if (!key)
    throw new ConfigError(`${file}: the signature does not verify with ${hint}: the bundle was changed after signing`);
  if (statement._type !== IN_TOTO_STATEMENT_TYPE)
    throw new ConfigError(`${file}: the payload is not an in-toto Statement v1`);
  const finishedAt = (statement.predicate as { finishedAt?: string } | undefined)?.finishedAt;
  if (finishedAt && !isKeyValidAt(key, Date.parse(finishedAt))) {
    throw new ConfigError(`${file}: ${hint} is not trusted at ${finishedAt}, when the run finished`);
  }
  return { statement, key };
}
