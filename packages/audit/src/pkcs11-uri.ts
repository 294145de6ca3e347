import { readFileSync } from 'node:fs';
import { ConfigError } from '@baton/errors';

/** The parts of an RFC 7512 PKCS#11 URI a signer needs: which module, token and key, and how to log in. */
export interface Pkcs11Uri {
  /** The PKCS#11 module (`module-path`), e.g. /usr/lib/softhsm/libsofthsm2.so. */
  readonly modulePath: string;
  /** Token label (`token`). */
  readonly token?: string;
  /** Slot (`slot-id`). */
  readonly slotId?: number;
  /** Key label (`object`). */
  readonly object?: string;
  /** Key id (`id`, percent-encoded bytes). */
  readonly id?: Buffer;
  /** Where the user PIN comes from, for messages: `pin-value`, `pin-source` or `BATON_PKCS11_PIN`. */
  readonly pinFrom: 'pin-value' | 'pin-source' | 'env' | 'none';
  /** The URI with any `pin-value` redacted: safe for logs and errors. */
  readonly display: string;
  /** Reads the user PIN (a `pin-source` file is read now, not when parsed). */
  pin(): string | undefined;
}

const PATH_ATTRS = new Set([
  'token',
  'object',
  'id',
  'slot-id',
  'type',
  'manufacturer',
  'model',
  'serial',
  'library-manufacturer',
  'library-description',
  'library-version',
  'slot-description',
  'slot-manufacturer',
]);
const QUERY_ATTRS = new Set(['module-path', 'module-name', 'pin-value', 'pin-source']);

/** Replaces `pin-value=…` with `pin-value=redacted` so a URI can be shown. */
export function redactPkcs11Uri(uri: string): string {
  return uri.replace(/(pin-value=)[^&]*/g, '$1redacted');
}

/**
 * Parses a PKCS#11 URI (RFC 7512), as cosign and p11-kit take them:
 * `pkcs11:token=baton;object=handoff?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/secrets/pin`.
 * The PIN comes from `pin-value`, a `pin-source` file, or the `BATON_PKCS11_PIN` variable.
 * @param source where the URI comes from, for messages.
 * @throws {ConfigError} naming the source, the rule and the fix; never the PIN.
 */
export function parsePkcs11Uri(uri: string, source: string, env: NodeJS.ProcessEnv = process.env): Pkcs11Uri {
  const display = redactPkcs11Uri(uri);
  const fail = (why: string): never => {
    throw new ConfigError(`${source}: ${display}: ${why}`);
  };
  if (!uri.startsWith('pkcs11:')) fail('a PKCS#11 URI starts with "pkcs11:" (RFC 7512)');
  const [pathPart = '', queryPart = ''] = uri.slice('pkcs11:'.length).split('?', 2);
  const path = attributes(pathPart, ';', PATH_ATTRS, fail);
  const query = attributes(queryPart, '&', QUERY_ATTRS, fail);
  const modulePath = query.get('module-path');
  if (!modulePath)
    fail('names no module-path; add ?module-path=<the PKCS#11 library>, e.g. /usr/lib/softhsm/libsofthsm2.so');
  if (path.get('type') && path.get('type') !== 'private') fail('type must be private (the signing key), or left out');
  if (!path.get('token') && !path.get('slot-id')) fail('names no token; add token=<label> (or slot-id=<n>)');
  if (!path.get('object') && !path.get('id')) fail('names no key; add object=<label> (or id=<%xx bytes>)');
  const slotText = path.get('slot-id');
  const slotId = slotText === undefined ? undefined : Number(slotText);
  if (slotId !== undefined && !Number.isSafeInteger(slotId)) fail('slot-id must be a decimal number');
  const idText = path.get('id');
  const pinValue = query.get('pin-value');
  const pinSource = query.get('pin-source');
  if (pinValue !== undefined && pinSource !== undefined) fail('give pin-value or pin-source, not both');
  const pinFrom =
    pinValue !== undefined
      ? 'pin-value'
      : pinSource !== undefined
        ? 'pin-source'
        : env.BATON_PKCS11_PIN
          ? 'env'
          : 'none';
  const token = path.get('token');
  const object = path.get('object');
  return {
    modulePath: modulePath!,
    ...(token !== undefined ? { token } : {}),
    ...(slotId !== undefined ? { slotId } : {}),
    ...(object !== undefined ? { object } : {}),
    ...(idText !== undefined ? { id: Buffer.from(idText, 'latin1') } : {}),
    pinFrom,
    display,
    pin() {
      if (pinValue !== undefined) return pinValue;
      if (pinSource !== undefined) {
        const file = pinSource.startsWith('file:') ? pinSource.slice('file:'.length) : pinSource;
        try {
          return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
        } catch (err) {
          throw new ConfigError(
            `${source}: ${display}: cannot read the pin-source file ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)}); point pin-source at a file holding the user PIN`,
            { cause: err },
          );
        }
      }
      return env.BATON_PKCS11_PIN || undefined;
    },
  };
}

// Splits `a=b;c=d` into decoded attributes; `id` is kept as raw bytes (latin1), the rest as UTF-8 text.
function attributes(
  text: string,
  separator: string,
  known: ReadonlySet<string>,
  fail: (why: string) => never,
): Map<string, string> {
  const out = new Map<string, string>();
  if (text === '') return out;
  for (const part of text.split(separator)) {
    const eq = part.indexOf('=');
    if (eq <= 0) fail(`"${part.startsWith('pin-value') ? 'pin-value=…' : part}" is not name=value`);
    const name = part.slice(0, eq);
    if (!known.has(name)) fail(`unknown attribute "${name}" (RFC 7512 names: ${[...known].join(', ')})`);
    if (out.has(name)) fail(`${name} is given twice`);
    const raw = part.slice(eq + 1);
    let value: string;
    try {
      value = name === 'id' ? Buffer.from(unescapeBytes(raw)).toString('latin1') : decodeURIComponent(raw);
    } catch {
      fail(`${name} is not valid percent-encoding`);
    }
    out.set(name, value!);
  }
  return out;
}

function unescapeBytes(text: string): number[] {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '%') {
      const hex = text.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new Error('bad escape');
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else bytes.push(...Buffer.from(text[i]!, 'utf8'));
  }
  return bytes;
}
