import { fileURLToPath } from 'node:url';
import { type HandoffSummary, previewHandoff } from '@baton/core';
import { BatonError, ConfigError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { batonController } from './controllers.js';
import { type HandoffInputs, withLoadedPlan } from './handoff-inputs.js';
import { checkHandoff, handoffProvider } from './provider.js';
import { runProviderHandoff } from './provider-run.js';

const manifests = fileURLToPath(new URL('../../../bootstrap-manifests/baton-controller', import.meta.url));
const PASSWORD = 'pull-password-0f3a9c';
const KUBECONFIG = 'apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: kubeconfig-token-77d1}}]';

function inputs(over: Partial<HandoffInputs> = {}): HandoffInputs {
  return {
    clusterName: 'prod-eu-1',
    kubeconfig: KUBECONFIG,
    controller: batonController({
      source: { url: 'http://git.example/cluster-config.git', ref: 'main', path: 'clusters/prod-eu-1' },
      manifests,
    }),
    pullCredential: { username: 'reader', password: PASSWORD },
    audit: { logPath: '/tmp/baton-unit/audit.log', signingKeyPath: '/tmp/baton-unit/key' },
    ...over,
  };
}

function summary(over: Partial<HandoffSummary> = {}): HandoffSummary {
  return {
    runId: '20261201182400-abc123',
    outcome: 'handed-off',
    cluster: { name: 'prod-eu-1', server: 'https://127.0.0.1:6443' },
    revision: 'a'.repeat(40),
    credential: {
      subject: 'system:serviceaccount:baton-system:baton-bootstrap-x',
      fingerprint: 'sha256:0123456789abcdef',
      jti: 'jti-1',
      issuedAt: '2026-12-01T18:24:00.000Z',
      expiresAt: '2026-12-01T18:34:00.000Z',
      revokedAt: '2026-12-01T18:24:10.000Z',
      secretDeletedAt: '2026-12-01T18:24:09.000Z',
      liveSeconds: 10,
      rules: [],
    },
    totalSeconds: 12,
    leftoversRemoved: [],
    stepDurationsMs: {},
    audit: {
      index: 3,
      eventId: '20261201182400-abc123',
      eventDigest: 'sha256:00',
      checkpoint: 'checkpoint',
      checkpointPath: '/tmp/cp',
      logPath: '/tmp/baton-unit/audit.log',
    },
    ...over,
  };
}

describe('checkHandoff', () => {
  it('accepts inputs the plan schema accepts', () => {
    expect(checkHandoff({}, inputs())).toEqual([]);
  });

  it("names the component's property path of a plan-schema refusal", () => {
    const bad = inputs({ controller: { ...inputs().controller, source: { url: '' } } });
    expect(checkHandoff({}, bad)).toEqual([{ property: 'controller.source.url', reason: expect.any(String) }]);
    const badBudget = checkHandoff({}, inputs({ push: { budgetSeconds: 900 } }));
    expect(badBudget.map((f) => f.property)).toEqual(['push.budgetSeconds']);
    const badMirror = checkHandoff({}, inputs({ push: { images: { mirrors: { 'ghcr.io': 'ftp://mirror' } } } }));
    expect(badMirror.map((f) => f.property)).toEqual(['push.images.mirrors.ghcr.io']);
    const badName = checkHandoff({}, inputs({ clusterName: 'Prod_EU' }));
    expect(badName).toEqual([{ property: 'clusterName', reason: 'must be a lowercase DNS name' }]);
  });

  it('never names a secret input as the property (the engine would print its value)', () => {
    const failures = checkHandoff({}, inputs({ kubeconfig: '' }));
    expect(failures).toHaveLength(1);
    expect(failures[0]!.property).toBe('');
    expect(failures[0]!.reason).toMatch(/^kubeconfig: /);
    const notStrings = checkHandoff({}, inputs({ pullCredential: { password: 7 as unknown as string } }));
    expect(notStrings.map((f) => f.property)).toEqual(['']);
    expect(notStrings[0]!.reason).toMatch(/^pullCredential: must be a map of key: string value/);
  });

  it('refuses a change to what was pushed once handed off, and says how to change it', () => {
    const old = inputs();
    const moved = inputs({ controller: { ...old.controller, source: { ...old.controller.source, ref: 'release' } } });
    const [f, ...rest] = checkHandoff(old, moved);
    expect(rest).toEqual([]);
    expect(f!.property).toBe('controller.source.ref');
    expect(f!.reason).toContain('the cluster is handed off; change it in Git');
    expect(f!.reason).toContain('pulumi up --replace');
    // A rotated pull password is refused without its value showing.
    const rotated = checkHandoff(old, inputs({ pullCredential: { username: 'reader', password: 'other' } }));
    expect(rotated.map((x) => x.property)).toEqual(['pullCredential.password']);
    expect(JSON.stringify(rotated)).not.toContain('other');
  });

  it("lets the operator's access change without a new handoff", () => {
    expect(checkHandoff(inputs(), inputs({ kubeconfig: `${KUBECONFIG}\n# rotated`, context: 'admin' }))).toEqual([]);
    // A new version of the component serializes another provider: not a change to the cluster.
    const withProvider = (p: string) => ({ ...inputs(), __provider: p }) as HandoffInputs;
    expect(checkHandoff(withProvider('v1'), withProvider('v2'))).toEqual([]);
  });
});

describe('the dynamic provider', () => {
  it('diffs no change as none, an access change as an update, and a push change as a replacement', async () => {
    const outs = { ...inputs(), receipt: {} as never };
    expect(await handoffProvider.diff('id', outs, inputs())).toEqual({ changes: false });
    expect(await handoffProvider.diff('id', outs, inputs({ context: 'admin' }))).toEqual({ changes: true });
    const replaced = await handoffProvider.diff('id', outs, inputs({ takeover: { timeoutSeconds: 10 } }));
    expect(replaced).toMatchObject({ changes: true, replaces: ['takeover'] });
  });

  it('returns the receipt of a handoff, keyed by cluster and run', async () => {
    const res = await runProviderHandoff(inputs(), { run: async () => summary() });
    expect(res.id).toBe('prod-eu-1/20261201182400-abc123');
    expect(res.outs.receipt).toMatchObject({
      outcome: 'handed-off',
      runId: '20261201182400-abc123',
      revision: 'a'.repeat(40),
      credential: { fingerprint: 'sha256:0123456789abcdef', liveSeconds: 10, revokedAt: '2026-12-01T18:24:10.000Z' },
      audit: { index: 3, eventId: '20261201182400-abc123', logPath: '/tmp/baton-unit/audit.log' },
      receiptName: 'baton-system/baton-receipt',
      proof: null,
    });
  });

  it('gives the run the plan with the pull credential in a file that is gone afterwards', async () => {
    let credentialFile = '';
    await runProviderHandoff(inputs(), {
      run: async (loaded) => {
        credentialFile = loaded.plan.pull.credential.fromFile!;
        const { readFileSync, statSync } = await import('node:fs');
        expect(JSON.parse(readFileSync(credentialFile, 'utf8'))).toEqual({ username: 'reader', password: PASSWORD });
        expect(statSync(credentialFile).mode & 0o077).toBe(0);
        expect(loaded.plan.cluster.kubeconfigContent).toBe(KUBECONFIG);
        return summary();
      },
    });
    const { existsSync } = await import('node:fs');
    expect(existsSync(credentialFile)).toBe(false);
  });

  it("fails with baton's one-paragraph error when the cluster was not handed off", async () => {
    const failed = summary({ outcome: 'failed', failedStep: 'takeover', error: 'the controller did not take over' });
    const err = await runProviderHandoff(inputs(), { run: async () => failed }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatonError);
    const message = (err as Error).message;
    expect(message).toContain('ended failed at step takeover: the controller did not take over.');
    expect(message).toContain('was revoked at 2026-12-01T18:24:10.000Z');
    expect(message).toContain('audit event 20261201182400-abc123 at index 3');
    expect(message).not.toContain('\n');
    expect(message).not.toContain(PASSWORD);
    // The handoff's own code, not one meant for child processes.
    expect((err as BatonError).code).toBe('internal');
  });

  it("fails a tampered run, even a repaired one, with the handoff's own error code", async () => {
    const tampered = summary({
      outcome: 'tampered',
      failedStep: 'post-close-check',
      error: 'post-close check: 1 pushed object(s) differ from the plan; repaired in 20 s',
      errorCode: 'tampered',
    });
    const err = await runProviderHandoff(inputs(), { run: async () => tampered }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatonError);
    expect((err as BatonError).code).toBe('tampered');
    expect((err as Error).message).toContain('ended tampered at step post-close-check');
    const timedOut = summary({ outcome: 'failed', failedStep: 'takeover', error: 'x', errorCode: 'timeout' });
    const e2 = await runProviderHandoff(inputs(), { run: async () => timedOut }).catch((e: unknown) => e);
    expect((e2 as BatonError).code).toBe('timeout');
  });

  it('refuses to record a declared revision that a cluster handed off earlier does not pull', async () => {
    const pinned = inputs({
      controller: { ...inputs().controller, source: { ...inputs().controller.source, revision: 'd'.repeat(40) } },
    });
    const { credential: _none, ...uncredentialed } = summary();
    const already: HandoffSummary = { ...uncredentialed, outcome: 'already-handed-off', revision: 'a'.repeat(40) };
    await expect(runProviderHandoff(pinned, { run: async () => already })).rejects.toThrow(
      /already handed off at revision a{40}, not the declared d{40}; a handed-off cluster follows Git/,
    );
    const same: HandoffSummary = { ...uncredentialed, outcome: 'already-handed-off', revision: 'd'.repeat(40) };
    const res = await runProviderHandoff(pinned, { run: async () => same });
    expect(res.outs.receipt).toMatchObject({ outcome: 'already-handed-off', credential: null });
  });

  it('refuses invalid inputs before anything runs', async () => {
    let ran = false;
    const run = async () => {
      ran = true;
      return summary();
    };
    await expect(runProviderHandoff(inputs({ clusterName: '' }), { run })).rejects.toThrow(ConfigError);
    expect(ran).toBe(false);
  });
});

describe('the preview of a refused manifest set', () => {
  it('fails naming the rule and the plan field, before anything touches a cluster', async () => {
    const bad = inputs({ controller: { ...inputs().controller, name: 'missing' } });
    await expect(withLoadedPlan(bad, true, previewHandoff)).rejects.toThrow(
      /has no Deployment or StatefulSet baton-system\/missing \(controller.name\)/,
    );
  });
});

describe('refreshReceipt', () => {
  it('shows no drift for the same handoff and the new run when the cluster was handed off again', async () => {
    const { refreshReceipt, receiptOf } = await import('./handoff-receipt.js');
    const stored = receiptOf(summary(), 'baton-system/baton-receipt');
    const same = {
      runId: stored.runId,
      outcome: 'handed-off',
      revision: 'a'.repeat(40),
      recordedAt: '2026-12-01T18:24:12.000Z',
      credentialFingerprint: 'sha256:0123456789abcdef',
      auditEventId: stored.runId,
      auditEventDigest: 'sha256:00',
      auditLogIndex: '3',
      auditCheckpoint: 'checkpoint',
    };
    expect(refreshReceipt(stored, same)).toBe(stored);
    const again = { ...same, runId: 'later', auditEventId: 'later', auditLogIndex: '4', revision: 'c'.repeat(40) };
    expect(refreshReceipt(stored, again)).toMatchObject({
      runId: 'later',
      revision: 'c'.repeat(40),
      audit: { index: 4, eventId: 'later' },
    });
    expect(refreshReceipt(stored, undefined).outcome).toBe('receipt-missing');
  });
});
