import { chmod, open, readFile, stat, writeFile } from 'node:fs/promises';
import { ConfigError } from '@baton/errors';
import { describeFsError } from './fs-error.js';
import { formatSigningKey, generateSigningKey, parseSigningKey, type SigningKey } from './signing-key.js';
import { formatTrustedKeys } from './trusted-keys.js';

const KEYGEN_HINT = 'create one with `baton audit keygen --out <dir>`';

/**
 * Writes a signing key to a new file with mode 0600. Refuses to overwrite an existing file, so a key that
 * signed a log is never lost by accident.
 * @throws {ConfigError} when the file exists or cannot be created.
 */
export async function writeSigningKeyFile(path: string, key: SigningKey): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (err) {
    const why = (err as { code?: unknown }).code === 'EEXIST' ? 'it already exists' : describeFsError(err);
    throw new ConfigError(`cannot write signing key ${path}: ${why}; choose another --out directory or --name`, {
      cause: err,
    });
  }
  try {
    // open()'s mode is filtered by the umask, which can only remove bits; chmod makes 0600 exact.
    await chmod(path, 0o600);
    await handle.writeFile(`${formatSigningKey(key)}\n`, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Generates a signing key, writes it to `signingKeyPath` (0600, never overwritten) and a trusted-keys file for
 * `origin` that verifies it to `keysPath`: a fresh, self-contained signer (demo, test bed). The key is named for the
 * origin, as C2SP tlog-checkpoint says a log's key SHOULD be.
 * @throws {ConfigError} when the key file exists or cannot be created.
 */
export async function writeSigningKeyPair(o: {
  readonly signingKeyPath: string;
  readonly keysPath: string;
  /** The key's name. @default the origin (C2SP tlog-checkpoint: a log's key name SHOULD be its origin) */
  readonly name?: string;
  /** @default 'baton.dev/handoff' */
  readonly origin?: string;
}): Promise<void> {
  const origin = o.origin ?? 'baton.dev/handoff';
  const key = generateSigningKey(o.name ?? origin);
  await writeSigningKeyFile(o.signingKeyPath, key);
  await writeFile(o.keysPath, formatTrustedKeys({ origin, keys: [{ key: key.verifierKey }] }));
}

/**
 * Reads a signing key file written by {@link writeSigningKeyFile} (`PRIVATE+KEY+name+hash+base64`).
 * Like ssh, it refuses a key file that group or others can read.
 * @throws {ConfigError} naming the file and the fix when it is unreadable, too open or malformed; never
 * includes key material in the message.
 */
export async function readSigningKeyFile(path: string): Promise<SigningKey> {
  let text: string;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
    if ((info.mode & 0o077) !== 0) {
      throw new ConfigError(
        `signing key ${path} is readable by others (mode ${(info.mode & 0o777).toString(8).padStart(4, '0')}); ` +
          `run chmod 600 ${path}`,
      );
    }
    text = await readFile(path, 'utf8');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`cannot read signing key ${path}: ${describeFsError(err)}; ${KEYGEN_HINT}`, { cause: err });
  }
  const parsed = parseSigningKey(text.trim());
  if (typeof parsed === 'string') {
    throw new ConfigError(`signing key ${path} is not a baton signing key: ${parsed}; ${KEYGEN_HINT}`);
  }
  return parsed;
}
