import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatTrustedKeys, SigningKey } from '@baton/audit';
import type { HandoffSummary } from '@baton/core';
import { deleteNamespacesAndWait } from '@baton/testbed';
import { apiserverRequestsBy } from '@baton/testenv';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { useHandoffCluster } from '../../support/handoff-cluster.js';
import { bootstrapMints, JWT_PATTERN, runBaton } from '../../support/handoff-run.js';
import { adminClients } from '../../support/kube.js';

// Issue 30: the audit key need not sit in a file baton reads. A signer command stands for a KMS or HSM vendor's tool:
// it holds the key (here a seed file in its own directory, which no plan names), reads the message on stdin, prints
// the base64 Ed25519 signature. baton checks every signature against the plan's public key.
const SIGNER = `
import { createPrivateKey, sign } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
const [seedFile, mode, seen] = process.argv.slice(2);
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
appendFileSync(seen, process.env.BATON_SIGN_SHA256 + '\\n');
if (mode === 'deny') { process.stderr.write('kms: PERMISSION_DENIED: caller lacks cloudkms.cryptoKeyVersions.useToSign\\n'); process.exit(7); }
const seed = Buffer.from(readFileSync(seedFile, 'utf8').trim(), 'hex');
const key = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
process.stdout.write(sign(null, Buffer.concat(chunks), key).toString('base64') + '\\n');
`;

const h = useHandoffCluster();
const SEED = Buffer.alloc(32, 0x5a);
const kms = SigningKey.fromSeed('baton.dev/handoff', SEED);
let script = '';
let seedFile = '';
let seen = '';

/** The bed's plan with its key file replaced by the signer command in `mode`. */
function signerPlan(mode: 'sign' | 'deny'): string {
  const plan = parse(readFileSync(h.env.planPath, 'utf8')) as { audit: Record<string, unknown> };
  const { signingKeyPath: _file, ...audit } = plan.audit;
  plan.audit = {
    ...audit,
    signer: { command: [process.execPath, script, seedFile, mode, seen], publicKey: kms.verifierKey },
  };
  const path = join(h.env.dir, `plan-${mode}.yaml`);
  writeFileSync(path, stringify(plan));
  return path;
}

const up = (planPath: string) =>
  runBaton(['up', '--plan', planPath, '-o', 'json', '--verbose']).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );

beforeAll(() => {
  script = join(h.env.dir, 'kms-sign.mjs');
  writeFileSync(script, SIGNER);
  seedFile = join(h.env.dir, 'kms-seed');
  writeFileSync(seedFile, SEED.toString('hex'), { mode: 0o600 });
  seen = join(h.env.dir, 'kms-seen');
  writeFileSync(seen, '');
});

describe('an audit key behind a signer command (a KMS or HSM)', () => {
  it('a signer that refuses stops the run before the cluster is touched: exit 1, refused, naming the command', async () => {
    const admin = adminClients(h.cluster.kubeconfigPath);
    const who = await admin.authn.createSelfSubjectReview({ body: {} });
    const operator = who.status?.userInfo?.username ?? '';
    expect(operator).not.toBe('');
    const t0 = Date.now();
    const r = await up(signerPlan('deny'));
    const t1 = Date.now();
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout) as { outcome: string; errorCode: string; error: string };
    expect(s).toMatchObject({ outcome: 'refused', errorCode: 'process' });
    expect(s.error).toMatch(
      /^audit\.signer: the signer command .* exited 7 \(stderr: kms: PERMISSION_DENIED: caller lacks cloudkms\.cryptoKeyVersions\.useToSign\); run it by hand/,
    );
    expect(r.stderr).toContain('PERMISSION_DENIED');
    // Not one request by the operator in that window: not the version read, not the namespace, not the lock.
    const auditLog = h.cluster.auditLogPath!;
    const during = apiserverRequestsBy(auditLog, operator).filter((e) => {
      const at = Date.parse(e.requestReceivedTimestamp);
      return at >= t0 && at <= t1;
    });
    expect(during.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect(bootstrapMints(auditLog)).toEqual([]);
  });

  it('hands off with every signature made by the command, a log `baton audit verify` accepts, and no key in any output', async () => {
    const before = readFileSync(seen, 'utf8').split('\n').filter(Boolean).length;
    const r = await up(signerPlan('sign'));
    const s = JSON.parse(r.stdout) as HandoffSummary;
    expect(s.outcome, s.error).toBe('handed-off');
    expect(r.stderr).toMatch(/"signerKind":"command".*audit signer checked/);
    expect(r.stderr).toContain(kms.verifierKey);
    // The probe before the run, the event's DSSE envelope, and two checkpoint notes: the new log's empty tree (written
    // when it is first opened) and the tree after the append.
    expect(readFileSync(seen, 'utf8').split('\n').filter(Boolean).length - before).toBe(4);
    const keys = join(h.env.dir, 'kms-keys.yaml');
    writeFileSync(keys, formatTrustedKeys({ origin: 'baton.dev/handoff', keys: [{ key: kms.verifierKey }] }));
    const verified = await runBaton(['audit', 'verify', h.env.auditLogPath, '--keys', keys]);
    expect(verified.stdout).toMatch(/verified/);
    // The same signature as a Sigstore bundle v0.3 beside the log; baton audit verify takes it too, and refuses it
    // once its statement is changed.
    const bundle = s.audit!.bundlePath!;
    expect(bundle).toBe(`${h.env.auditLogPath}.bundles/${s.runId}.sigstore.json`);
    const b = JSON.parse(readFileSync(bundle, 'utf8'));
    expect(b.mediaType).toBe('application/vnd.dev.sigstore.bundle.v0.3+json');
    expect((await runBaton(['audit', 'verify', bundle, '--keys', keys])).stdout).toMatch(
      /verified .*: a https:\/\/baton\.dev\/handoff\/v1 statement about 3 subjects, signed by baton\.dev\/handoff\+/,
    );
    const statement = JSON.parse(Buffer.from(b.dsseEnvelope.payload, 'base64').toString());
    // The signed record says what signed it: the kind of key and its public half.
    expect(statement.predicate.signer).toEqual({ kind: 'command', verifierKey: kms.verifierKey });
    statement.predicate.cluster.name = 'another-cluster';
    b.dsseEnvelope.payload = Buffer.from(JSON.stringify(statement)).toString('base64');
    const tampered = join(h.env.dir, 'tampered.sigstore.json');
    writeFileSync(tampered, JSON.stringify(b));
    await expect(runBaton(['audit', 'verify', tampered, '--keys', keys])).rejects.toMatchObject({
      code: 1,
      stdout: expect.stringMatching(
        /verification FAILED for .*tampered\.sigstore\.json: the signature does not verify/,
      ),
    });
    // The bed's own key file did not sign it: verifying with it fails.
    await expect(runBaton(['audit', 'verify', h.env.auditLogPath, '--keys', h.env.keysPath])).rejects.toMatchObject({
      code: 1,
    });
    const out = r.stdout + r.stderr + readFileSync(h.env.auditLogPath, 'utf8');
    expect(out).not.toContain(SEED.toString('hex'));
    expect(out).not.toContain(SEED.toString('base64'));
    expect(out).not.toMatch(JWT_PATTERN);
  });

  it('a key in a PKCS#11 token (SoftHSM): a wrong PIN refuses the run; the right one signs a probe, then a whole handoff', async () => {
    const tokens = join(h.env.dir, 'softhsm');
    mkdirSync(tokens);
    const conf = join(h.env.dir, 'softhsm2.conf');
    writeFileSync(conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\n`);
    const env = { ...process.env, SOFTHSM2_CONF: conf };
    execFileSync(
      'softhsm2-util',
      ['--init-token', '--free', '--label', 'ops', '--pin', '73915046', '--so-pin', '1357'],
      {
        env,
        stdio: 'ignore',
      },
    );
    writeFileSync(join(h.env.dir, 'pin'), '73915046\n', { mode: 0o600 });
    const uri = (pin: string) =>
      `pkcs11:token=ops;object=handoff?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:${pin}`;
    process.env.SOFTHSM2_CONF = conf;
    try {
      const made = await runBaton([
        'audit',
        'keygen',
        '--pkcs11',
        uri(join(h.env.dir, 'pin')),
        '--out',
        join(h.env.dir, 'hsm'),
        '--origin',
        'baton.dev/handoff',
      ]);
      const tokenKey = /key: {10}(\S+)/.exec(made.stdout)?.[1];
      expect(tokenKey).toMatch(/^baton\.dev\/handoff\+/);
      const planFor = (pinFile: string) => {
        const plan = parse(readFileSync(h.env.planPath, 'utf8')) as { audit: Record<string, unknown> };
        const { signingKeyPath: _file, ...audit } = plan.audit;
        plan.audit = { ...audit, logPath: './audit/hsm.log', signer: { pkcs11: uri(pinFile), publicKey: tokenKey } };
        const path = join(h.env.dir, `plan-hsm-${pinFile.endsWith('bad-pin') ? 'bad' : 'good'}.yaml`);
        writeFileSync(path, stringify(plan));
        return path;
      };
      writeFileSync(join(h.env.dir, 'bad-pin'), '11112222\n', { mode: 0o600 });
      const bad = await up(planFor(join(h.env.dir, 'bad-pin')));
      expect(bad.code).toBe(2);
      expect(JSON.parse(bad.stdout)).toMatchObject({ outcome: 'refused', errorCode: 'config' });
      expect(bad.stderr).toMatch(
        /audit\.signer\.pkcs11: pkcs11:token=ops;object=handoff\?.*: login refused \(CKR_PIN_INCORRECT, PIN from pin-source\)/,
      );
      // The cluster was handed off above: this run stops there, after the token signed its probe.
      const good = await up(planFor(join(h.env.dir, 'pin')));
      expect(JSON.parse(good.stdout).outcome).toBe('already-handed-off');
      expect(good.stderr).toMatch(/"signerKind":"pkcs11".*audit signer checked/);
      expect(good.stderr).toContain(tokenKey);
      expect(good.stdout + good.stderr + bad.stdout + bad.stderr).not.toMatch(/73915046|11112222/);

      // A whole handoff recorded through the token, on the cluster made new (baton-system and the receipt go): the
      // probe, the event and the checkpoints are all signed inside it.
      await deleteNamespacesAndWait(h.cluster.kubeconfigPath, ['baton-system']);
      const full = await up(planFor(join(h.env.dir, 'pin')));
      const s = JSON.parse(full.stdout) as HandoffSummary;
      expect(s.outcome).toBe('handed-off');
      const hsmLog = join(h.env.dir, 'audit', 'hsm.log');
      const hsmKeys = join(h.env.dir, 'hsm', 'trusted-keys.yaml');
      expect((await runBaton(['audit', 'verify', hsmLog, '--keys', hsmKeys])).stdout).toMatch(/verified/);
      expect((await runBaton(['audit', 'verify', s.audit!.bundlePath!, '--keys', hsmKeys])).stdout).toMatch(
        /verified .*signed by baton\.dev\/handoff\+/,
      );
      const bundle = JSON.parse(readFileSync(s.audit!.bundlePath!, 'utf8'));
      const statement = JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString());
      expect(statement.predicate.signer).toEqual({ kind: 'pkcs11', verifierKey: tokenKey });
      // The bed's key file signed none of it.
      await expect(runBaton(['audit', 'verify', hsmLog, '--keys', h.env.keysPath])).rejects.toMatchObject({ code: 1 });
      expect(full.stdout + full.stderr + readFileSync(hsmLog, 'utf8')).not.toMatch(/73915046/);
    } finally {
      delete process.env.SOFTHSM2_CONF;
    }
  });
});
