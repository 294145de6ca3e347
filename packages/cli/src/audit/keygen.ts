import { createPublicKey } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  DEFAULT_ORIGIN,
  formatTrustedKeys,
  formatVerifierKey,
  generatePkcs11Key,
  generateSigningKey,
  isValidKeyName,
  parseTrustedKeys,
  redactPkcs11Uri,
  type TrustedKeysFile,
  writeSigningKeyFile,
} from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { Command } from '@commander-js/extra-typings';
import { print } from './cli-io.js';

/** The trusted-keys file keygen writes next to the private key. */
export const TRUSTED_KEYS_FILE = 'trusted-keys.yaml';

/**
 * `baton audit keygen`: a new Ed25519 signing key (mode 0600) and the trusted-keys file that names it; or, with
 * `--public-key`, a key generated elsewhere (a KMS or HSM) added to that file by its public half.
 */
export function keygenCommand() {
  return new Command('keygen')
    .description(
      'create an Ed25519 signing key (mode 0600) and add it to the trusted-keys file in the same folder; with --public-key, add a KMS or HSM key instead',
    )
    .requiredOption('--out <dir>', 'folder for <name>.key and trusted-keys.yaml (created if missing)')
    .option('--name <name>', 'key name as it appears in signatures (no spaces or +) (default: the log origin)')
    .option(
      '--origin <origin>',
      `log origin the trusted-keys file vouches for (a new file only) (default: ${DEFAULT_ORIGIN})`,
    )
    .option('--valid-from <time>', 'signatures before this RFC 3339 time do not count (for key rotation)')
    .option('--valid-until <time>', 'signatures at or after this RFC 3339 time do not count')
    .option(
      '--pkcs11 <uri>',
      'create the key inside a PKCS#11 token instead (RFC 7512 URI with object=, module-path= and pin-source=); it never leaves the token',
    )
    .option(
      '--public-key <pem>',
      "a key held in a KMS or HSM (its Ed25519 public key, PEM): trust it instead of creating one; prints the plan's audit.signer.publicKey",
    )
    .action(async (o) => {
      if (o.pkcs11 && o.publicKey) throw new ConfigError('--pkcs11 and --public-key: give one of them');
      if (o.pkcs11) {
        const { keysPath, verifierKey } = await writeNewPkcs11Key({ ...o, uri: o.pkcs11 });
        print(`private key:  in the token, ${redactPkcs11Uri(o.pkcs11)} (the plan's audit.signer.pkcs11)`);
        print(`trusted keys: ${keysPath} (publish it; pass it to --keys)`);
        print(`key:          ${verifierKey}`);
        return;
      }
      if (o.publicKey) {
        const { keysPath, verifierKey } = await trustPublicKey({ ...o, pem: o.publicKey });
        print(`trusted keys: ${keysPath} (publish it; pass it to --keys)`);
        print(`key:          ${verifierKey} (the plan's audit.signer.publicKey)`);
        return;
      }
      const { keyPath, keysPath, verifierKey } = await writeNewSigningKey(o);
      print(`private key:  ${keyPath} (mode 0600; keep it secret, pass it to --key)`);
      print(`trusted keys: ${keysPath} (publish it; pass it to --keys)`);
      print(`key:          ${verifierKey}`);
    });
}

/** Options of {@link writeNewSigningKey}: `baton audit keygen`'s flags. */
export interface NewSigningKeyOptions {
  /** Folder for `<name>.key` and `trusted-keys.yaml` (created if missing). */
  readonly out: string;
  /** Key name in signatures. @default the log's origin (C2SP tlog-checkpoint) */
  readonly name?: string;
  /** Log origin of a new trusted-keys file. @default DEFAULT_ORIGIN */
  readonly origin?: string;
  readonly validFrom?: string;
  readonly validUntil?: string;
}

/**
 * Writes a new Ed25519 signing key (mode 0600) and adds it to the trusted-keys file in the same folder.
 * @throws {ConfigError} when the trusted-keys file is unreadable, for another origin, or the name is invalid.
 */
export async function writeNewSigningKey(
  o: NewSigningKeyOptions,
): Promise<{ readonly keyPath: string; readonly keysPath: string; readonly verifierKey: string }> {
  const trust = await openTrustedKeys(o);
  let key: ReturnType<typeof generateSigningKey>;
  try {
    key = generateSigningKey(trust.name);
  } catch (err) {
    throw new ConfigError(`--name ${trust.name}: ${(err as Error).message}`);
  }
  // An origin holds slashes; a key named for it (the default) gets its hash too, so a rotated key gets a new file.
  const keyPath = join(
    trust.dir,
    o.name ? `${trust.name}.key` : `${trust.name.replace(/[^A-Za-z0-9._-]/g, '_')}-${key.keyId.toString('hex')}.key`,
  );
  const text = trust.withKey(key.verifierKey);
  await writeSigningKeyFile(keyPath, key);
  await writeFile(trust.keysPath, text, { mode: 0o644 });
  return { keyPath, keysPath: trust.keysPath, verifierKey: key.verifierKey };
}

/**
 * Adds a key held elsewhere (a KMS or HSM: its Ed25519 public key as PEM) to the trusted-keys file in `out`, and
 * returns its verifier key: the plan's `audit.signer.publicKey`.
 * @throws {ConfigError} naming the PEM file when it is not an Ed25519 public key, or the trusted-keys problem.
 */
export async function trustPublicKey(
  o: NewSigningKeyOptions & { readonly pem: string },
): Promise<{ readonly keysPath: string; readonly verifierKey: string }> {
  let raw: Buffer;
  try {
    const key = createPublicKey(await readFile(o.pem, 'utf8'));
    if (key.asymmetricKeyType !== 'ed25519')
      throw new Error(`it is an ${key.asymmetricKeyType?.toUpperCase()} key, not Ed25519`);
    raw = Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
  } catch (err) {
    throw new ConfigError(
      `--public-key ${o.pem}: not an Ed25519 public key in PEM (${(err as Error).message}); export the KMS key version's public key (an Ed25519 key, e.g. EC_SIGN_ED25519 or ED25519_SHA_512)`,
      { cause: err },
    );
  }
  const trust = await openTrustedKeys(o);
  if (!isValidKeyName(trust.name))
    throw new ConfigError(`--name ${trust.name}: must be non-empty, without spaces or "+"`);
  const verifierKey = formatVerifierKey(trust.name, raw);
  await writeFile(trust.keysPath, trust.withKey(verifierKey), { mode: 0o644 });
  return { keysPath: trust.keysPath, verifierKey };
}

/**
 * Generates an Ed25519 key inside a PKCS#11 token (never extractable) and adds it to the trusted-keys file in `out`.
 * @throws {ConfigError} naming the URI (PIN redacted) or the trusted-keys problem.
 */
export async function writeNewPkcs11Key(
  o: NewSigningKeyOptions & { readonly uri: string },
): Promise<{ readonly keysPath: string; readonly verifierKey: string }> {
  const trust = await openTrustedKeys(o);
  // Check the trusted-keys file with a placeholder first: a bad --valid-from must not leave a key in the token.
  trust.withKey(formatVerifierKey(trust.name, Buffer.alloc(32)));
  const verifierKey = await generatePkcs11Key({ uri: o.uri, keyName: trust.name, source: '--pkcs11' });
  await writeFile(trust.keysPath, trust.withKey(verifierKey), { mode: 0o644 });
  return { keysPath: trust.keysPath, verifierKey };
}

/** The trusted-keys file in `o.out` (or a new one), the key name to use, and the file's text with one more key. */
async function openTrustedKeys(o: NewSigningKeyOptions): Promise<{
  readonly dir: string;
  readonly keysPath: string;
  readonly name: string;
  withKey(verifierKey: string): string;
}> {
  const dir = resolve(o.out);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const keysPath = join(dir, TRUSTED_KEYS_FILE);
  const existing = await readFile(keysPath, 'utf8').then(
    (text) => parseTrustedKeys(text, keysPath),
    (err: { code?: string }) => {
      if (err.code === 'ENOENT') return undefined;
      throw new ConfigError(`cannot read ${keysPath}: ${String(err)}`);
    },
  );
  if (existing && o.origin && existing.origin !== o.origin) {
    throw new ConfigError(
      `${keysPath} is for origin "${existing.origin}", not "${o.origin}"; use another --out folder for another log`,
    );
  }
  // C2SP tlog-checkpoint: a log's key name SHOULD be its origin (a rotated key keeps the name; its hash differs).
  const name = o.name ?? existing?.origin ?? o.origin ?? DEFAULT_ORIGIN;
  return {
    dir,
    keysPath,
    name,
    withKey(verifierKey) {
      const entry = {
        key: verifierKey,
        ...(o.validFrom ? { validFrom: o.validFrom } : {}),
        ...(o.validUntil ? { validUntil: o.validUntil } : {}),
      };
      const file: TrustedKeysFile = existing
        ? { ...existing.toFile(), keys: [...existing.toFile().keys, entry] }
        : { origin: o.origin ?? DEFAULT_ORIGIN, keys: [entry] };
      // Validate the whole file (times, origin) before anything is written.
      const text = formatTrustedKeys(file);
      parseTrustedKeys(text, keysPath);
      return text;
    },
  };
}
