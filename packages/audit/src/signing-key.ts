import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  hash,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { inspect } from 'node:util';

/** C2SP signed-note signature type byte for Ed25519. */
const ED25519_TYPE = 0x01;
// DER prefixes that turn a raw 32-byte Ed25519 seed / public key into PKCS#8 / SPKI for node:crypto.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const SIGNER_KEY_PREFIX = 'PRIVATE+KEY+';

/** Where a signer's private key lives; recorded with what it signs, never the key itself. */
export type SignerKind = 'key-file' | 'command' | 'pkcs11';

/**
 * Something that signs: a checkpoint note, a DSSE envelope. Ed25519 only (C2SP signed notes define no other type a
 * Go verifier reads). Signing is asynchronous because the key may sit outside the process (a KMS behind a command).
 */
export interface Signer {
  /** Key name as it appears in signed-note signature lines (no spaces, no `+`). */
  readonly name: string;
  /** C2SP key ID: the first 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ publicKey). */
  readonly keyId: Buffer;
  /** Raw 32-byte Ed25519 public key. */
  readonly publicKey: Buffer;
  /** Verifier key string `name+hex(keyId)+base64(0x01 ‖ publicKey)`, safe to publish. */
  readonly verifierKey: string;
  readonly kind: SignerKind;
  /** Signs `message` with Ed25519 (RFC 8032, the message itself, not a prehash) and returns the 64-byte signature. */
  sign(message: Uint8Array): Promise<Buffer>;
  /** Releases what the signer holds (a PKCS#11 session); signers without any leave it out. */
  close?(): Promise<void>;
}

/** True when `name` is a valid signed-note key name: non-empty, printable, no whitespace, no `+`. */
export function isValidKeyName(name: string): boolean {
  return /^[^\s+\p{Cc}]+$/u.test(name) && name.length <= 256;
}

/** C2SP signed-note key ID of an Ed25519 public key: SHA-256(name ‖ 0x0A ‖ 0x01 ‖ publicKey)[:4]. */
export function noteKeyId(name: string, publicKey: Uint8Array): Buffer {
  const data = Buffer.concat([Buffer.from(`${name}\n`, 'utf8'), Buffer.from([ED25519_TYPE]), publicKey]);
  return hash('sha256', data, 'buffer').subarray(0, 4);
}

/** Formats a public key as a C2SP verifier key string: `name+hex(keyId)+base64(0x01 ‖ publicKey)`. */
export function formatVerifierKey(name: string, publicKey: Uint8Array): string {
  const material = Buffer.concat([Buffer.from([ED25519_TYPE]), publicKey]).toString('base64');
  return `${name}+${noteKeyId(name, publicKey).toString('hex')}+${material}`;
}

/** A parsed, checked C2SP Ed25519 verifier key. */
export interface VerifierKey {
  readonly name: string;
  readonly keyId: Buffer;
  readonly publicKey: Buffer;
  /** node:crypto handle, created once so verification does not re-parse the key. */
  readonly keyObject: KeyObject;
  /** The canonical string form. */
  readonly verifierKey: string;
}

/**
 * Parses a verifier key string. Returns a reason string instead of throwing, so callers can name their file.
 */
export function parseVerifierKey(text: string): VerifierKey | string {
  const parts = splitKey(text);
  if (!parts) return 'a verifier key has the form name+hash+base64(0x01 ‖ public key)';
  const [name, hashHex, material] = parts;
  if (!isValidKeyName(name)) return `key name "${name}" must be non-empty, without spaces or "+"`;
  if (!/^[0-9a-f]{8}$/.test(hashHex)) return 'key hash must be 8 lowercase hex digits';
  const raw = decodeStrictBase64(material);
  if (raw === undefined || raw.length !== 33) return 'key material must be base64 of 33 bytes (0x01 ‖ 32-byte key)';
  if (raw[0] !== ED25519_TYPE) return `key type 0x${raw[0]!.toString(16)} is not Ed25519 (0x01)`;
  const publicKey = raw.subarray(1);
  if (noteKeyId(name, publicKey).toString('hex') !== hashHex) return 'key hash does not match the name and key';
  return {
    name,
    keyId: Buffer.from(hashHex, 'hex'),
    publicKey,
    keyObject: publicKeyObject(publicKey),
    verifierKey: text,
  };
}

/** A node:crypto public KeyObject for a raw 32-byte Ed25519 key. */
export function publicKeyObject(publicKey: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, publicKey]), format: 'der', type: 'spki' });
}

/** Ed25519 verification that returns false (never throws) for malformed signatures. */
export function verifyEd25519(key: KeyObject, message: Uint8Array, signature: Uint8Array): boolean {
  if (signature.length !== 64) return false;
  try {
    return verify(null, message, key, signature);
  } catch {
    return false;
  }
}

/**
 * An Ed25519 signing key. The private key never leaves this object: it is not enumerable, not serialised by
 * `JSON.stringify` and not shown by `util.inspect`; only {@link formatSigningKey} writes it, for a key file.
 */
export class SigningKey implements Signer {
  readonly name: string;
  readonly keyId: Buffer;
  readonly publicKey: Buffer;
  readonly verifierKey: string;
  readonly kind = 'key-file';
  readonly #privateKey: KeyObject;
  readonly #seed: Buffer;

  private constructor(name: string, seed: Buffer) {
    this.#seed = Buffer.from(seed);
    this.#privateKey = createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
      format: 'der',
      type: 'pkcs8',
    });
    const jwk = createPublicKey(this.#privateKey).export({ format: 'jwk' });
    this.name = name;
    this.publicKey = Buffer.from(jwk.x!, 'base64url');
    this.keyId = noteKeyId(name, this.publicKey);
    this.verifierKey = formatVerifierKey(name, this.publicKey);
  }

  /** @internal Builds a key from a name and 32-byte seed; use {@link generateSigningKey} or {@link parseSigningKey}. */
  static fromSeed(name: string, seed: Uint8Array): SigningKey {
    if (!isValidKeyName(name)) throw new RangeError(`key name "${name}" must be non-empty, without spaces or "+"`);
    if (seed.length !== 32) throw new RangeError('an Ed25519 seed is 32 bytes');
    return new SigningKey(name, Buffer.from(seed));
  }

  async sign(message: Uint8Array): Promise<Buffer> {
    return sign(null, message, this.#privateKey);
  }

  /** @internal The seed, for {@link formatSigningKey} only. */
  exportSeed(): Buffer {
    return Buffer.from(this.#seed);
  }

  toJSON(): { name: string; verifierKey: string } {
    return { name: this.name, verifierKey: this.verifierKey };
  }

  [inspect.custom](): string {
    return `SigningKey { name: '${this.name}', verifierKey: '${this.verifierKey}', privateKey: [redacted] }`;
  }
}

/** Generates a fresh Ed25519 signing key with the given signed-note key name. */
export function generateSigningKey(name: string): SigningKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  return SigningKey.fromSeed(name, Buffer.from(jwk.d!, 'base64url'));
}

/**
 * Formats a signing key as the C2SP/Go signer key string `PRIVATE+KEY+name+hash+base64(0x01 ‖ seed)`.
 * The result is a secret: write it only to a mode-0600 file.
 */
export function formatSigningKey(key: SigningKey): string {
  const material = Buffer.concat([Buffer.from([ED25519_TYPE]), key.exportSeed()]).toString('base64');
  return `${SIGNER_KEY_PREFIX}${key.name}+${key.keyId.toString('hex')}+${material}`;
}

/**
 * Parses a signer key string (`PRIVATE+KEY+name+hash+base64(0x01 ‖ seed)`). Returns a reason string instead of
 * throwing so that callers can name their file; the reason never contains key material.
 */
export function parseSigningKey(text: string): SigningKey | string {
  if (!text.startsWith(SIGNER_KEY_PREFIX)) return 'a signing key starts with PRIVATE+KEY+';
  const parts = splitKey(text.slice(SIGNER_KEY_PREFIX.length));
  if (!parts) return 'a signing key has the form PRIVATE+KEY+name+hash+base64(0x01 ‖ seed)';
  const [name, hashHex, material] = parts;
  if (!isValidKeyName(name)) return 'the key name must be non-empty, without spaces or "+"';
  if (!/^[0-9a-f]{8}$/.test(hashHex)) return 'the key hash must be 8 lowercase hex digits';
  const raw = decodeStrictBase64(material);
  if (raw === undefined || raw.length !== 33 || raw[0] !== ED25519_TYPE) {
    return 'the key material is not base64 of an Ed25519 seed (0x01 ‖ 32 bytes)';
  }
  const key = SigningKey.fromSeed(name, raw.subarray(1));
  // The key ID is public (it is in every signature line), so a plain comparison leaks nothing.
  if (key.keyId.toString('hex') !== hashHex) return 'the key hash does not match the key';
  return key;
}

// name+hash+material, where the base64 material may itself contain '+': split at the first two only.
function splitKey(text: string): [string, string, string] | undefined {
  const first = text.indexOf('+');
  const second = first < 0 ? -1 : text.indexOf('+', first + 1);
  if (second < 0) return undefined;
  return [text.slice(0, first), text.slice(first + 1, second), text.slice(second + 1)];
}

/**
 * Decodes standard, canonically padded base64, or returns undefined. Buffer.from(…, 'base64') alone silently skips
 * junk and accepts URL-safe letters; checking the decoded length catches skipped junk, the last group is re-encoded
 * to catch URL-safe letters and non-canonical padding bits, and only the rest is scanned for '-' and '_'.
 * With `prefix`, the result is `prefix ‖ decoded`.
 */
export function decodeStrictBase64(text: string, prefix?: Uint8Array): Buffer | undefined {
  if (text.length % 4 !== 0) return undefined;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const size = (text.length / 4) * 3 - padding;
  // With a prefix, decode straight after it into one buffer (the DSSE PAE), saving a copy of the payload.
  const at = prefix?.length ?? 0;
  const buf = Buffer.allocUnsafe(at + size);
  if (prefix) buf.set(prefix);
  if (buf.write(text, at, 'base64') !== size) return undefined;
  // Node decodes '-' and '_' as URL-safe letters without shortening the output: reject them explicitly.
  if (text.includes('-') || text.includes('_')) return undefined;
  const tail = Math.max(0, text.length - 4);
  return buf.subarray(at + (tail / 4) * 3).toString('base64') === text.slice(tail) ? buf : undefined;
}
