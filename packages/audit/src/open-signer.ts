import { createCommandSigner } from './command-signer.js';
import { preAuthEncoding } from './dsse.js';
import { readSigningKeyFile } from './key-files.js';
import { openPkcs11Signer } from './pkcs11-signer.js';
import type { Signer, SignerKind } from './signing-key.js';

/** Where the audit signing key lives, as a plan resolves it. */
export type SignerSpec =
  | { readonly kind: 'key-file'; readonly path: string }
  | {
      readonly kind: 'command';
      /** The program and its arguments, run without a shell. */
      readonly command: readonly string[];
      /** The verifier key of the key the command signs with. */
      readonly verifierKey: string;
      /** @default 30 */
      readonly timeoutSeconds?: number;
    }
  | {
      readonly kind: 'pkcs11';
      /** RFC 7512 URI of the private key, with `module-path` (and `pin-source`, or `BATON_PKCS11_PIN`). */
      readonly uri: string;
      /** The key's name in signatures: the log's origin, unless a publicKey names another. */
      readonly keyName: string;
      /** When given, the token's key must be this one. */
      readonly verifierKey?: string;
    };

/** What a record may say about its signer: the kind and the public half, never the key. */
export interface SignerIdentity {
  readonly kind: SignerKind;
  readonly verifierKey: string;
}

/**
 * Opens the signer a spec names: reads a key file (refusing one others can read), wraps a signer command, or opens a
 * session on a PKCS#11 token. Call its `close` (when it has one) when done.
 * @param source where the spec comes from, for messages (`plan.yaml: audit.signer`).
 * @throws {ConfigError} naming the file or field and the fix.
 */
export async function openSigner(spec: SignerSpec, source = 'audit.signer'): Promise<Signer> {
  if (spec.kind === 'key-file') return readSigningKeyFile(spec.path);
  if (spec.kind === 'pkcs11') {
    return openPkcs11Signer({
      uri: spec.uri,
      keyName: spec.keyName,
      ...(spec.verifierKey ? { verifierKey: spec.verifierKey } : {}),
      source: `${source}.pkcs11`,
    });
  }
  return createCommandSigner({
    command: spec.command,
    verifierKey: spec.verifierKey,
    timeoutMs: (spec.timeoutSeconds ?? 30) * 1000,
    source,
  });
}

// The probe is a DSSE pre-authentication encoding of its own payload type: no verifier of handoff events or
// checkpoints accepts it as one, so asking the key to sign it grants nothing.
const PROBE_TYPE = 'application/vnd.baton.signer-probe+json';

/**
 * Opens the signer and has it sign a probe, before anything is minted: a missing key file, a signer command that
 * fails or signs with another key is found while nothing exists to clean up, not after a handoff it cannot record.
 * @throws {ConfigError} or {ProcessError} naming the source, the cause and the fix.
 */
export async function checkSigner(spec: SignerSpec, source?: string): Promise<SignerIdentity> {
  const signer = await openSigner(spec, source);
  try {
    return await probeSigner(signer);
  } finally {
    await signer.close?.();
  }
}

/** Has an open signer sign the probe (see {@link checkSigner}) and says what it is. */
export async function probeSigner(signer: Signer): Promise<SignerIdentity> {
  await signer.sign(preAuthEncoding(PROBE_TYPE, Buffer.from(JSON.stringify({ probe: new Date().toISOString() }))));
  return { kind: signer.kind, verifierKey: signer.verifierKey };
}
