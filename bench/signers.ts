// `pnpm bench:signers [--count N] [--command-count M]`: what each kind of audit signer costs (issue 30).
// Writes bench/results/signers.json. For each kind that `audit.signer` accepts, through the same `openSigner` a
// handoff uses:
//   - key-file: the Ed25519 key in baton's process (the baseline, same run);
//   - command: a signer command per signature, two of them: a Node.js script (what a KMS client written in Node
//     costs to start) and a shell wrapper around `openssl pkeyutl` (a small native tool);
//   - pkcs11: a key generated in a SoftHSM 2 token (the session's open and login, then each signature in the token).
// Medians of N signatures (M for commands, which start a process each). Per handoff, baton signs four times (the
// probe before minting, the event, the new log's first checkpoint and the checkpoint after the append) and opens
// the signer twice (the check and the append): the `perHandoffMs` figure adds those up from the medians.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  generatePkcs11Key,
  openSigner,
  preAuthEncoding,
  type Signer,
  type SignerSpec,
  SigningKey,
  writeSigningKeyFile,
} from '@baton/audit';
import { median, numberFlag, round } from './stats.js';

const flag = (name: string, fallback: number) => numberFlag(process.argv.slice(2), name, fallback);
const COUNT = flag('--count', 500);
const COMMAND_COUNT = flag('--command-count', 40);
const SOFTHSM = '/usr/lib/softhsm/libsofthsm2.so';
const ORIGIN = 'bench.baton.dev/handoff';
const resultPath = new URL('./results/signers.json', import.meta.url).pathname;
const log = (s: string) => process.stderr.write(`[bench:signers] ${s}\n`);

const dir = mkdtempSync(join(tmpdir(), 'baton-bench-signers-'));
const seed = createHash('sha256').update('baton bench signer').digest();
const key = SigningKey.fromSeed(ORIGIN, seed);
// A message the size of a handoff event's PAE (about 3 KB); every signature signs a fresh one.
const message = () =>
  preAuthEncoding('application/vnd.in-toto+json', Buffer.concat([randomBytes(16), Buffer.alloc(3000, 'x')]));

interface KindResult {
  readonly signatures: number;
  readonly openMs: number;
  readonly signMs: number;
  readonly signMsP90: number;
  readonly perHandoffMs: number;
}

async function measure(name: string, spec: SignerSpec, count: number): Promise<KindResult> {
  const opens: number[] = [];
  const signs: number[] = [];
  // Opening is measured a few times (each open of a token initialises the module and logs in).
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const s = await openSigner(spec, `bench ${name}`);
    opens.push(performance.now() - t0);
    await s.close?.();
  }
  const signer: Signer = await openSigner(spec, `bench ${name}`);
  try {
    for (let i = 0; i < count; i++) {
      const m = message();
      const t0 = performance.now();
      await signer.sign(m);
      signs.push(performance.now() - t0);
    }
  } finally {
    await signer.close?.();
  }
  const sorted = [...signs].sort((a, b) => a - b);
  const openMs = median(opens);
  const signMs = median(signs);
  const result = {
    signatures: count,
    openMs: round(openMs, 3),
    signMs: round(signMs, 3),
    signMsP90: round(sorted[Math.floor(sorted.length * 0.9)]!, 3),
    perHandoffMs: round(2 * openMs + 4 * signMs, 2),
  };
  log(`${name}: ${JSON.stringify(result)}`);
  return result;
}

try {
  const load = loadavg()[0]!;
  log(`${COUNT} signatures per in-process kind, ${COMMAND_COUNT} per command; load average ${load.toFixed(1)}`);

  // The baseline: the key file a plan's signingKeyPath names.
  const keyFile = join(dir, 'signing.key');
  await writeSigningKeyFile(keyFile, key);
  const keyFileResult = await measure('key-file', { kind: 'key-file', path: keyFile }, COUNT);

  // Signer commands holding the same key: a Node.js script, and openssl behind sh.
  const seedFile = join(dir, 'seed');
  writeFileSync(seedFile, seed.toString('hex'), { mode: 0o600 });
  const script = join(dir, 'sign.mjs');
  writeFileSync(
    script,
    `import { createPrivateKey, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
const seed = Buffer.from(readFileSync(process.argv[2], 'utf8').trim(), 'hex');
const key = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
process.stdout.write(sign(null, Buffer.concat(chunks), key).toString('base64'));
`,
  );
  const pem = join(dir, 'key.pem');
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  writeFileSync(pem, `-----BEGIN PRIVATE KEY-----\n${der.toString('base64')}\n-----END PRIVATE KEY-----\n`, {
    mode: 0o600,
  });
  // openssl's one-shot Ed25519 signing reads a file, not a pipe.
  const opensslSign = `f=$(mktemp) && cat > "$f" && openssl pkeyutl -sign -rawin -inkey '${pem}' -in "$f" | base64 -w0; rm -f "$f"`;
  const nodeCommand = await measure(
    'command (node script)',
    { kind: 'command', command: [process.execPath, script, seedFile], verifierKey: key.verifierKey },
    COMMAND_COUNT,
  );
  const opensslCommand = await measure(
    'command (sh + openssl)',
    { kind: 'command', command: ['sh', '-c', opensslSign], verifierKey: key.verifierKey },
    COMMAND_COUNT,
  );

  // A key generated in a SoftHSM 2 token (its own token directory, removed at the end).
  mkdirSync(join(dir, 'tokens'));
  writeFileSync(
    join(dir, 'softhsm2.conf'),
    `directories.tokendir = ${dir}/tokens\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  process.env.SOFTHSM2_CONF = join(dir, 'softhsm2.conf');
  const pin = '604817';
  execFileSync('softhsm2-util', ['--init-token', '--free', '--label', 'bench', '--pin', pin, '--so-pin', '918273'], {
    stdio: 'ignore',
  });
  writeFileSync(join(dir, 'pin'), pin, { mode: 0o600 });
  const uri = `pkcs11:token=bench;object=handoff?module-path=${SOFTHSM}&pin-source=file:${join(dir, 'pin')}`;
  const verifierKey = await generatePkcs11Key({ uri, keyName: ORIGIN, source: 'bench' });
  const pkcs11 = await measure('pkcs11 (SoftHSM 2)', { kind: 'pkcs11', uri, keyName: ORIGIN, verifierKey }, COUNT);

  const result = {
    benchmark: 'signers',
    measuredAt: new Date().toISOString(),
    machine: { cores: cpus().length, loadAverageAtStart: round(load, 2), loadAverageAtEnd: round(loadavg()[0]!, 2) },
    versions: {
      node: process.version,
      openssl: execFileSync('openssl', ['version'], { encoding: 'utf8' }).trim(),
      softhsm: execFileSync('softhsm2-util', ['--version'], { encoding: 'utf8' }).trim(),
    },
    baseline: 'key-file, same run: the Ed25519 key in baton’s own process',
    kinds: {
      'key-file': keyFileResult,
      'command-node': nodeCommand,
      'command-openssl': opensslCommand,
      pkcs11,
    },
    overBaselinePerHandoffMs: {
      'command-node': round(nodeCommand.perHandoffMs - keyFileResult.perHandoffMs, 2),
      'command-openssl': round(opensslCommand.perHandoffMs - keyFileResult.perHandoffMs, 2),
      pkcs11: round(pkcs11.perHandoffMs - keyFileResult.perHandoffMs, 2),
    },
    notes:
      'Medians of single signatures of a 3 KB message through openSigner (the command kind verifies each returned signature against the configured public key, as in a handoff). perHandoffMs = 2 opens + 4 signatures (check and append each open the signer; probe, event and two checkpoints are signed). A real KMS adds its network round trip to the command figures.',
  };
  writeFileSync(resultPath, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
