import { z } from 'zod';
import type { Signer } from './signing-key.js';
import { dsseKeyId } from './trusted-keys.js';

/** The payload type in-toto requires for a Statement inside DSSE. */
export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

// Base64 is checked when it is decoded (strictly, in code): a regex here would scan every payload twice.
const Base64 = z.string().max(1_048_576);

/**
 * A DSSE v1 JSON envelope: the payload, its type, and one or more signatures over PAE(type, payload). Unknown fields
 * (in the envelope and in a signature) are kept and ignored: the DSSE protocol says consumers MUST ignore them, and
 * only the payload is signed.
 */
export const DsseEnvelopeSchema = z
  .looseObject({
    payload: Base64.describe('base64 of the serialized body (here: an in-toto Statement v1)'),
    payloadType: z.string().min(1).describe('media type of the payload'),
    signatures: z
      .array(
        z.looseObject({
          keyid: z.string().describe('unauthenticated hint: name+hash of the signing key'),
          sig: Base64.describe('base64 Ed25519 signature over PAE(payloadType, payload)'),
        }),
      )
      .min(1)
      .max(16),
  })
  .describe('DSSE v1 envelope');

/** A DSSE v1 JSON envelope. */
export type DsseEnvelope = z.infer<typeof DsseEnvelopeSchema>;

/**
 * DSSE v1 Pre-Authentication Encoding: `"DSSEv1" SP len(type) SP type SP len(body) SP body`, lengths in bytes
 * as ASCII decimal. Signing this instead of the bare body binds the type and avoids canonicalisation.
 */
export function preAuthEncoding(payloadType: string, payload: Uint8Array): Buffer {
  return Buffer.concat([preAuthHeader(payloadType, payload.length), payload]);
}

/** The PAE up to the body: `"DSSEv1" SP len(type) SP type SP len(body) SP`. */
export function preAuthHeader(payloadType: string, payloadBytes: number): Buffer {
  return Buffer.from(`DSSEv1 ${Buffer.byteLength(payloadType, 'utf8')} ${payloadType} ${payloadBytes} `, 'utf8');
}

/** Signs `payload` with every signer and returns the DSSE envelope. */
export async function signEnvelope(
  payloadType: string,
  payload: Uint8Array,
  signers: readonly Signer[],
): Promise<DsseEnvelope> {
  const pae = preAuthEncoding(payloadType, payload);
  return {
    payload: Buffer.from(payload).toString('base64'),
    payloadType,
    signatures: await Promise.all(
      signers.map(async (s) => ({ keyid: dsseKeyId(s), sig: (await s.sign(pae)).toString('base64') })),
    ),
  };
}
