import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  DEFAULT_ORIGIN,
  formatTrustedKeys,
  generateSigningKey,
  parseTrustedKeys,
  type TrustedKeysFile,
  writeSigningKeyFile,
} from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { Command } from '@commander-js/extra-typings';
import { print } from './cli-io.js';

/** The trusted-keys file keygen writes next to the private key. */
export const TRUSTED_KEYS_FILE = 'trusted-keys.yaml';

/** `baton audit keygen`: a new Ed25519 signing key (mode 0600) and the trusted-keys file that names it. */
export function keygenCommand() {
  return new Command('keygen')
    .description('create an Ed25519 signing key (mode 0600) and add it to the trusted-keys file in the same folder')
    .requiredOption('--out <dir>', 'folder for <name>.key and trusted-keys.yaml (created if missing)')
    .option('--name <name>', 'key name as it appears in signatures (no spaces or +) (default: the log origin)')
    .option(
      '--origin <origin>',
      `log origin the trusted-keys file vouches for (a new file only) (default: ${DEFAULT_ORIGIN})`,
    )
    .option('--valid-from <time>', 'signatures before this RFC 3339 time do not count (for key rotation)')
    .option('--valid-until <time>', 'signatures at or after this RFC 3339 time do not count')
    .action(async (o) => {
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
  let key: ReturnType<typeof generateSigningKey>;
  try {
    key = generateSigningKey(name);
  } catch (err) {
    throw new ConfigError(`--name ${name}: ${(err as Error).message}`);
  }
  // An origin holds slashes; a key named for it (the default) gets its hash too, so a rotated key gets a new file.
  const keyPath = join(
    dir,
    o.name ? `${name}.key` : `${name.replace(/[^A-Za-z0-9._-]/g, '_')}-${key.keyId.toString('hex')}.key`,
  );
  const entry = {
    key: key.verifierKey,
    ...(o.validFrom ? { validFrom: o.validFrom } : {}),
    ...(o.validUntil ? { validUntil: o.validUntil } : {}),
  };
  const file: TrustedKeysFile = existing
    ? { ...existing.toFile(), keys: [...existing.toFile().keys, entry] }
    : { origin: o.origin ?? DEFAULT_ORIGIN, keys: [entry] };
  // Validate the whole file (times, origin) before anything is written.
  const text = formatTrustedKeys(file);
  parseTrustedKeys(text, keysPath);
  await writeSigningKeyFile(keyPath, key);
  await writeFile(keysPath, text, { mode: 0o644 });
  return { keyPath, keysPath, verifierKey: key.verifierKey };
}
