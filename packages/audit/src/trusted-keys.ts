import { readFile } from 'node:fs/promises';
import { ConfigError } from '@baton/errors';
import { stringify } from 'yaml';
import { z } from 'zod';
import { isValidOrigin } from './checkpoint.js';
import { describeFsError } from './fs-error.js';
import { parseYaml } from './parse-yaml.js';
import { parseVerifierKey, type VerifierKey } from './signing-key.js';

const Timestamp = z.iso.datetime({ offset: true });

/** One trusted key in a trusted-keys file, with the window in which its signatures count. */
export const TrustedKeyEntrySchema = z.strictObject({
  key: z
    .string()
    .refine((k) => typeof parseVerifierKey(k) !== 'string', {
      error: (issue) => `not a valid Ed25519 verifier key: ${parseVerifierKey(String(issue.input))}`,
    })
    .describe('C2SP verifier key: name+hash+base64(0x01 ‖ public key), as `baton audit keygen` prints it'),
  validFrom: Timestamp.optional().describe('Signatures dated before this time do not count. Absent: no lower bound.'),
  validUntil: Timestamp.optional().describe('Signatures dated at or after this time do not count. Absent: no end.'),
});

/** The trusted-keys file `baton audit verify --keys` reads (YAML or JSON). */
export const TrustedKeysFileSchema = z
  .strictObject({
    origin: z
      .string()
      .refine(isValidOrigin, 'must be a non-empty line without surrounding spaces')
      .describe('The checkpoint origin of the log these keys vouch for, e.g. example.com/baton/audit.'),
    keys: z.array(TrustedKeyEntrySchema).min(1).describe('Keys trusted to sign events and checkpoints.'),
  })
  .describe('Keys trusted to sign a baton audit log, with validity windows for key rotation.');

/** The parsed trusted-keys file. */
export type TrustedKeysFile = z.infer<typeof TrustedKeysFileSchema>;

/** A trusted verifier key with its validity window in epoch milliseconds (±Infinity when open). */
export interface TrustedKey extends VerifierKey {
  readonly validFromMs: number;
  readonly validUntilMs: number;
}

/** DSSE `keyid` baton writes for a key: `name+hex(keyId)`, the verifier key without its material. */
export function dsseKeyId(key: { readonly name: string; readonly keyId: Buffer }): string {
  return `${key.name}+${key.keyId.toString('hex')}`;
}

/** True when `key` may vouch for something dated `timeMs` (epoch milliseconds). */
export function isKeyValidAt(key: TrustedKey, timeMs: number): boolean {
  return timeMs >= key.validFromMs && timeMs < key.validUntilMs;
}

/**
 * The keys a verifier trusts for one log origin. Lookups by signed-note name + key ID and by DSSE keyid; a key
 * that is not here is unknown, and (as C2SP signed-note requires) unknown keys' signatures are ignored.
 */
export class TrustedKeySet {
  readonly origin: string;
  readonly keys: readonly TrustedKey[];
  readonly #byDsse = new Map<string, TrustedKey[]>();

  /** @throws {ConfigError} when an entry is not a valid verifier key. */
  constructor(file: TrustedKeysFile) {
    this.origin = file.origin;
    this.keys = file.keys.map((entry, i) => {
      const parsed = parseVerifierKey(entry.key);
      if (typeof parsed === 'string') throw new ConfigError(`keys[${i}].key: ${parsed}`);
      return {
        ...parsed,
        validFromMs: entry.validFrom ? Date.parse(entry.validFrom) : Number.NEGATIVE_INFINITY,
        validUntilMs: entry.validUntil ? Date.parse(entry.validUntil) : Number.POSITIVE_INFINITY,
      };
    });
    for (const key of this.keys) {
      const id = dsseKeyId(key);
      this.#byDsse.set(id, [...(this.#byDsse.get(id) ?? []), key]);
    }
  }

  /** Keys a DSSE signature's `keyid` names (several when one key is trusted for several windows). */
  forDsseKeyId(keyid: string): readonly TrustedKey[] {
    return this.#byDsse.get(keyid) ?? [];
  }

  /** Keys a signed-note signature line names: same name and same 4-byte key ID. */
  forNoteSignature(name: string, keyId: Uint8Array): readonly TrustedKey[] {
    return this.forDsseKeyId(`${name}+${Buffer.from(keyId).toString('hex')}`);
  }

  /** The file form, e.g. to hand to a worker thread. */
  toFile(): TrustedKeysFile {
    return {
      origin: this.origin,
      keys: this.keys.map((k) => ({
        key: k.verifierKey,
        ...(Number.isFinite(k.validFromMs) ? { validFrom: new Date(k.validFromMs).toISOString() } : {}),
        ...(Number.isFinite(k.validUntilMs) ? { validUntil: new Date(k.validUntilMs).toISOString() } : {}),
      })),
    };
  }
}

const FIX = 'a trusted-keys file has `origin:` and `keys:` entries with `key:`, as `baton audit keygen` writes it';

/**
 * Parses a trusted-keys file's text.
 * @throws {ConfigError} naming the file and line when it is not valid YAML/JSON or breaks the schema.
 */
export function parseTrustedKeys(text: string, file: string): TrustedKeySet {
  return new TrustedKeySet(parseYaml(text, file, TrustedKeysFileSchema, FIX));
}

/**
 * Reads and parses a trusted-keys file.
 * @throws {ConfigError} when the file cannot be read (naming the cause and the fix) or is invalid.
 */
export async function loadTrustedKeys(path: string): Promise<TrustedKeySet> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read trusted-keys file ${path}: ${describeFsError(err)}; ${FIX}`, { cause: err });
  }
  return parseTrustedKeys(text, path);
}

/** Formats a trusted-keys file as commented YAML. */
export function formatTrustedKeys(file: TrustedKeysFile): string {
  const header =
    '# Keys trusted to sign a baton audit log. Pass this file to `baton audit verify --keys`.\n' +
    '# Rotate by adding a key; end the old key with validUntil once checkpoints carry the new one.\n';
  return header + stringify(TrustedKeysFileSchema.parse(file), { version: '1.1', lineWidth: 0 });
}
