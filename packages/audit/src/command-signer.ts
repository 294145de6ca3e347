import { spawn as nodeSpawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { ConfigError, ProcessError } from '@baton/errors';
import { parseVerifierKey, type Signer, type VerifierKey, verifyEd25519 } from './signing-key.js';

/** Options of {@link createCommandSigner}. */
export interface CommandSignerOptions {
  /** The program and its arguments, run without a shell. */
  readonly command: readonly string[];
  /** The verifier key (`name+hash+base64`) of the key the command signs with: every signature is checked against it. */
  readonly verifierKey: string;
  /** @default 30_000 */
  readonly timeoutMs?: number;
  /** Where the setting comes from, for messages (`plan.yaml: audit.signer`). @default 'audit.signer' */
  readonly source?: string;
  /** Injected for tests of the process handling. @default node:child_process spawn */
  readonly spawn?: typeof nodeSpawn;
}

// A signature is 88 base64 characters; anything much longer is not one, and is not kept.
const MAX_STDOUT = 4096;
const MAX_STDERR = 2048;

/**
 * A {@link Signer} whose private key lives elsewhere (a KMS, an HSM behind a vendor tool, a signing service), reached
 * through a command: baton writes the message to its stdin and reads the base64 Ed25519 signature from its stdout.
 * The message itself, not a digest: Ed25519 (RFC 8032) signs the message, and Ed25519 KMS keys take it whole (GCP
 * EC_SIGN_ED25519, AWS ED25519_SHA_512 with a RAW message). Its SHA-256 is in `BATON_SIGN_SHA256` for the command's
 * own log or approval step. Every signature is verified against the configured public key before it is used, so a
 * command that signs with another key, or returns garbage, fails here and not in a verifier later.
 * @throws {ConfigError} when the verifier key or command is malformed, naming the source and the fix.
 */
export function createCommandSigner(o: CommandSignerOptions): Signer {
  const source = o.source ?? 'audit.signer';
  const key = parseVerifierKey(o.verifierKey);
  if (typeof key === 'string') {
    throw new ConfigError(
      `${source}.publicKey: ${key}; give the verifier key of the key the command signs with (the line a trusted-keys file lists)`,
    );
  }
  const [program, ...args] = o.command;
  if (!program) throw new ConfigError(`${source}.command: empty; give the signing program and its arguments`);
  const timeoutMs = o.timeoutMs ?? 30_000;
  const spawn = o.spawn ?? nodeSpawn;
  return {
    kind: 'command',
    name: key.name,
    keyId: key.keyId,
    publicKey: key.publicKey,
    verifierKey: key.verifierKey,
    sign: (message) => runSigner({ program, args, key, message, timeoutMs, spawn, source }),
  };
}

async function runSigner(o: {
  readonly program: string;
  readonly args: readonly string[];
  readonly key: VerifierKey;
  readonly message: Uint8Array;
  readonly timeoutMs: number;
  readonly spawn: typeof nodeSpawn;
  readonly source: string;
}): Promise<Buffer> {
  const what = `${o.source}: the signer command ${o.program}`;
  const digest = createHash('sha256').update(o.message).digest('hex');
  const out = await new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>(
    (resolvePromise, reject) => {
      const child = o.spawn(o.program, [...o.args], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, BATON_SIGN_SHA256: digest, BATON_SIGN_KEY: o.key.verifierKey },
      });
      let stdout = '';
      let stderr = '';
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, o.timeoutMs);
      child.stdout?.setEncoding('utf8').on('data', (d: string) => {
        if (stdout.length < MAX_STDOUT) stdout += d;
      });
      child.stderr?.setEncoding('utf8').on('data', (d: string) => {
        stderr = (stderr + d).slice(-MAX_STDERR);
      });
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(
          new ProcessError(`${what} could not be started: ${err.message}; check the path and that it is executable`, {
            cause: err,
          }),
        );
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (timedOut) {
          reject(
            new ProcessError(
              `${what} did not answer within ${o.timeoutMs / 1000} s and was killed; check that the KMS or HSM is reachable, or raise ${o.source}.timeoutSeconds`,
            ),
          );
          return;
        }
        resolvePromise({ code, signal, stdout, stderr });
      });
      // A command that exits without reading its stdin makes the write fail with EPIPE: its exit code says more.
      child.stdin?.on('error', () => {});
      child.stdin?.end(Buffer.from(o.message));
    },
  );
  if (out.code !== 0) {
    const how = out.signal ? `was killed by ${out.signal}` : `exited ${out.code}`;
    throw new ProcessError(`${what} ${how}${describeStderr(out.stderr)}; run it by hand to see why`);
  }
  const text = out.stdout.trim();
  const sig = /^[A-Za-z0-9+/]{86}==$/.test(text) ? Buffer.from(text, 'base64') : undefined;
  if (sig?.length !== 64) {
    throw new ProcessError(
      `${what} printed ${text.length} characters, not the base64 of a 64-byte Ed25519 signature; it must print the signature and nothing else on stdout`,
    );
  }
  if (!verifyEd25519(o.key.keyObject, o.message, sig)) {
    throw new ProcessError(
      `${what} returned a signature that does not verify with ${o.source}.publicKey (${o.key.verifierKey}); the command signs with another key, or over something other than its stdin`,
    );
  }
  return sig;
}

// The last line of stderr says why, usually; it is the command's own text, so it is cut short and never echoes stdin.
function describeStderr(stderr: string): string {
  const last = stderr.trim().split('\n').at(-1)?.trim();
  return last ? ` (stderr: ${last.slice(0, 300)})` : '';
}
