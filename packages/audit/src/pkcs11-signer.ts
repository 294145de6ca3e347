import { randomBytes } from 'node:crypto';
import { ConfigError, ProcessError } from '@baton/errors';
import type * as P11 from 'pkcs11js';
import { type Pkcs11Uri, parsePkcs11Uri } from './pkcs11-uri.js';
import {
  formatVerifierKey,
  isValidKeyName,
  noteKeyId,
  publicKeyObject,
  type Signer,
  verifyEd25519,
} from './signing-key.js';

// PKCS#11 3.0 names pkcs11js does not export.
const CKM_EC_EDWARDS_KEY_PAIR_GEN = 0x1055;
const CKM_EDDSA = 0x1057;
const CKK_EC_EDWARDS = 0x40;
// DER of the Ed25519 OID (1.3.101.112): the curve of an EC_EDWARDS key (RFC 8410).
const ED25519_PARAMS = Buffer.from('06032b6570', 'hex');

type Module = typeof P11;
type Library = P11.PKCS11;

/** The module's library, initialised once per process and module path (C_Initialize may run only once). */
const libraries = new Map<string, { lib: Library; refs: number }>();

async function loadModule(source: string): Promise<Module> {
  try {
    const mod = (await import('pkcs11js')) as Module & { default?: Module };
    return mod.default ?? mod;
  } catch (err) {
    throw new ConfigError(
      `${source}: a PKCS#11 signer needs the pkcs11js package (a native binding, an optional peer of @baton/audit): install it next to baton (npm install pkcs11js)`,
      { cause: err },
    );
  }
}

async function acquire(uri: Pkcs11Uri, source: string): Promise<{ mod: Module; lib: Library; release(): void }> {
  const mod = await loadModule(source);
  let entry = libraries.get(uri.modulePath);
  if (!entry) {
    const lib = new mod.PKCS11();
    try {
      lib.load(uri.modulePath);
      lib.C_Initialize();
    } catch (err) {
      throw new ConfigError(
        `${source}: ${uri.display}: cannot load the PKCS#11 module ${uri.modulePath} (${(err as Error).message}); check module-path`,
        { cause: err },
      );
    }
    entry = { lib, refs: 0 };
    libraries.set(uri.modulePath, entry);
  }
  entry.refs++;
  const held = entry;
  let released = false;
  return {
    mod,
    lib: held.lib,
    release() {
      if (released) return;
      released = true;
      if (--held.refs > 0) return;
      libraries.delete(uri.modulePath);
      try {
        held.lib.C_Finalize();
      } catch {
        // Finalizing can only fail when the module is already gone; nothing is left to release.
      }
    },
  };
}

/** A logged-in session on the URI's token; `close` logs out and releases the module. */
async function openSession(
  uri: Pkcs11Uri,
  source: string,
  write: boolean,
): Promise<{ mod: Module; lib: Library; session: Buffer; close(): void }> {
  const { mod, lib, release } = await acquire(uri, source);
  const fail = (why: string, err?: unknown): never => {
    release();
    throw new ConfigError(`${source}: ${uri.display}: ${why}`, err ? { cause: err } : {});
  };
  const slots = lib.C_GetSlotList(true);
  const slot = slots.find(
    (s) =>
      (uri.slotId === undefined || slotNumber(s) === uri.slotId) &&
      (uri.token === undefined || lib.C_GetTokenInfo(s).label.trim() === uri.token),
  );
  if (!slot) {
    const labels = slots.map((s) => lib.C_GetTokenInfo(s).label.trim());
    fail(
      `no token ${uri.token ?? `in slot ${uri.slotId}`} (the module has ${labels.length ? labels.join(', ') : 'none'}); check token=`,
    );
  }
  let session: Buffer;
  try {
    session = lib.C_OpenSession(slot!, mod.CKF_SERIAL_SESSION | (write ? mod.CKF_RW_SESSION : 0));
  } catch (err) {
    fail(`cannot open a session (${(err as Error).message})`, err);
  }
  const pin = uri.pin();
  if (pin === undefined) {
    lib.C_CloseSession(session!);
    fail('no user PIN: add pin-source=file:<path> to the URI or set BATON_PKCS11_PIN');
  }
  try {
    lib.C_Login(session!, mod.CKU_USER, pin);
  } catch (err) {
    const code = (err as Error).message.split(':')[0];
    if (code !== 'CKR_USER_ALREADY_LOGGED_IN') {
      lib.C_CloseSession(session!);
      fail(`login refused (${code}, PIN from ${uri.pinFrom}); check the PIN`, err);
    }
  }
  return {
    mod,
    lib,
    session: session!,
    close() {
      try {
        lib.C_CloseSession(session!);
      } catch {
        // A session the module already dropped (token removed) needs no closing.
      }
      release();
    },
  };
}

// pkcs11js hands slot ids as little-endian buffers of the platform's CK_ULONG.
function slotNumber(slot: Buffer): number {
  return slot.length >= 8 ? Number(slot.readBigUInt64LE(0)) : slot.readUInt32LE(0);
}

function keyTemplate(mod: Module, uri: Pkcs11Uri, cls: number): P11.Template {
  return [
    { type: mod.CKA_CLASS, value: cls },
    { type: mod.CKA_KEY_TYPE, value: CKK_EC_EDWARDS },
    ...(uri.object !== undefined ? [{ type: mod.CKA_LABEL, value: uri.object }] : []),
    ...(uri.id !== undefined ? [{ type: mod.CKA_ID, value: uri.id }] : []),
  ];
}

function findOne(lib: Library, session: Buffer, template: P11.Template): Buffer[] {
  lib.C_FindObjectsInit(session, template);
  try {
    return lib.C_FindObjects(session, 2);
  } finally {
    lib.C_FindObjectsFinal(session);
  }
}

// CKA_EC_POINT of an Ed25519 key: the 32-byte key, usually DER-wrapped in an OCTET STRING (04 20 …).
function rawPublicKey(point: Buffer): Buffer | undefined {
  if (point.length === 32) return point;
  if (point.length === 34 && point[0] === 0x04 && point[1] === 0x20) return point.subarray(2);
  return undefined;
}

/** Options of {@link openPkcs11Signer}. */
export interface Pkcs11SignerOptions {
  /** The RFC 7512 URI of the private key, with `module-path`. */
  readonly uri: string;
  /** The key's name in signatures (the log's origin, by C2SP tlog-checkpoint). */
  readonly keyName: string;
  /** When given, the token's key must be this one. */
  readonly verifierKey?: string;
  /** Where the URI comes from, for messages. @default 'audit.signer.pkcs11' */
  readonly source?: string;
}

/**
 * A {@link Signer} over an Ed25519 key in a PKCS#11 token (an HSM, SoftHSM): the key signs inside the token
 * (CKM_EDDSA) and never leaves it; baton reads only its public half. Close it when done (`close`).
 * @throws {ConfigError} naming the URI (its PIN redacted), what is missing and the fix.
 */
export async function openPkcs11Signer(o: Pkcs11SignerOptions): Promise<Signer & { close(): Promise<void> }> {
  const source = o.source ?? 'audit.signer.pkcs11';
  const uri = parsePkcs11Uri(o.uri, source);
  if (!isValidKeyName(o.keyName))
    throw new ConfigError(`${source}: key name "${o.keyName}" must be non-empty, without spaces or "+"`);
  const s = await openSession(uri, source, false);
  const fail = (why: string): never => {
    s.close();
    throw new ConfigError(`${source}: ${uri.display}: ${why}`);
  };
  const privates = findOne(s.lib, s.session, keyTemplate(s.mod, uri, s.mod.CKO_PRIVATE_KEY));
  if (privates.length !== 1)
    fail(
      privates.length === 0
        ? 'no Ed25519 private key with that object/id in the token; create one with baton audit keygen --pkcs11'
        : 'more than one key matches; add id= to the URI',
    );
  const publics = findOne(s.lib, s.session, keyTemplate(s.mod, uri, s.mod.CKO_PUBLIC_KEY));
  if (publics.length !== 1)
    fail('the key has no public key object next to it (same object/id); baton reads the public half from it');
  const [point] = s.lib.C_GetAttributeValue(s.session, publics[0]!, [{ type: s.mod.CKA_EC_POINT }]);
  const publicKey = rawPublicKey(point?.value as Buffer);
  if (!publicKey) fail('the public key is not an Ed25519 point (32 bytes); baton signs with Ed25519 only');
  const verifierKey = formatVerifierKey(o.keyName, publicKey!);
  if (o.verifierKey !== undefined && o.verifierKey !== verifierKey)
    fail(`the token's key is ${verifierKey}, not the plan's publicKey ${o.verifierKey}; fix publicKey or the URI`);
  const privateKey = privates[0]!;
  const keyObject = publicKeyObject(publicKey!);
  let closed = false;
  return {
    kind: 'pkcs11',
    name: o.keyName,
    keyId: noteKeyId(o.keyName, publicKey!),
    publicKey: publicKey!,
    verifierKey,
    async sign(message) {
      if (closed) throw new ProcessError(`${source}: ${uri.display}: the signer was closed`);
      let sig: Buffer;
      try {
        s.lib.C_SignInit(s.session, { mechanism: CKM_EDDSA }, privateKey);
        sig = s.lib.C_Sign(s.session, Buffer.from(message), Buffer.alloc(64));
      } catch (err) {
        throw new ProcessError(`${source}: ${uri.display}: the token refused to sign (${(err as Error).message})`, {
          cause: err,
        });
      }
      // A token that signs with another mechanism or key would produce signatures no verifier accepts: check here.
      if (!verifyEd25519(keyObject, message, sig))
        throw new ProcessError(`${source}: ${uri.display}: the token's signature does not verify with its public key`);
      return sig;
    },
    async close() {
      if (closed) return;
      closed = true;
      s.close();
    },
  };
}

/**
 * Generates an Ed25519 key pair inside the token (private, sensitive, never extractable) under the URI's object
 * label and id, and returns its verifier key. Refuses when a key with that label or id exists.
 * @throws {ConfigError} naming the URI and the fix.
 */
export async function generatePkcs11Key(o: { uri: string; keyName: string; source?: string }): Promise<string> {
  const source = o.source ?? '--pkcs11';
  const uri = parsePkcs11Uri(o.uri, source);
  if (uri.object === undefined)
    throw new ConfigError(`${source}: ${uri.display}: name the new key with object=<label>`);
  if (!isValidKeyName(o.keyName))
    throw new ConfigError(`--name ${o.keyName}: must be non-empty, without spaces or "+"`);
  const s = await openSession(uri, source, true);
  try {
    const existing = findOne(s.lib, s.session, [{ type: s.mod.CKA_LABEL, value: uri.object }]);
    if (existing.length > 0)
      throw new ConfigError(
        `${source}: ${uri.display}: the token already holds an object labelled "${uri.object}"; choose another object=`,
      );
    const id = uri.id ?? randomBytes(8);
    const common = [
      { type: s.mod.CKA_TOKEN, value: true },
      { type: s.mod.CKA_LABEL, value: uri.object },
      { type: s.mod.CKA_ID, value: id },
    ];
    const keys = s.lib.C_GenerateKeyPair(
      s.session,
      { mechanism: CKM_EC_EDWARDS_KEY_PAIR_GEN },
      [...common, { type: s.mod.CKA_VERIFY, value: true }, { type: s.mod.CKA_EC_PARAMS, value: ED25519_PARAMS }],
      [
        ...common,
        { type: s.mod.CKA_SIGN, value: true },
        { type: s.mod.CKA_PRIVATE, value: true },
        { type: s.mod.CKA_SENSITIVE, value: true },
        { type: s.mod.CKA_EXTRACTABLE, value: false },
      ],
    );
    const [point] = s.lib.C_GetAttributeValue(s.session, keys.publicKey, [{ type: s.mod.CKA_EC_POINT }]);
    const raw = rawPublicKey(point?.value as Buffer);
    if (!raw) throw new ConfigError(`${source}: ${uri.display}: the token made a key that is not Ed25519`);
    return formatVerifierKey(o.keyName, raw);
  } finally {
    s.close();
  }
}
