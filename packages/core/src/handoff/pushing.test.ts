import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TamperingError } from '@baton/errors';
import { bootstrapRefFor, type ConfinedObject, type KubeClients, type KubeObject, planConfinement } from '@baton/kube';
import { ApiException } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createSettlingFakeClock } from '../fake-clock.js';
import { loadHandoffPlan } from '../handoff-plan.js';
import type { ManifestSet } from '../manifest-set.js';
import { closeWriteWindow } from './close.js';
import { fakeHandoffDeps } from './fake-deps.js';
import { type Minted, NOT_ENDED } from './phases.js';
import { push, verifyAfterClose } from './pushing.js';
import { HandoffRun } from './run.js';
import { credentialSummary } from './summary.js';
import { blamedStepOf, outcomeOf } from './verdict.js';

// The end of the push on the fake clock: the close, the unbinding, the token's own confirmation that it may neither
// write nor read the plan, and the post-close check, against scripted operator and bootstrap clients.

const fixture = fileURLToPath(new URL('../../../../test/fixtures/handoff/plan.yaml', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const SUBJECT = 'system:serviceaccount:baton-system:baton-bootstrap-r1';
const secret = (password: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'pull', namespace: 'gitops-system' },
  type: 'Opaque',
  data: { password: Buffer.from(password).toString('base64') },
});
const configMap: KubeObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'source', namespace: 'gitops-system' },
  data: { url: 'https://git.example/repo' },
};

interface Script {
  /** What the cluster holds when the operator reads an object back (by name). */
  readonly held?: Readonly<Record<string, KubeObject>>;
  /** How many access reviews answer "allowed" before RBAC drops the bindings. */
  readonly allowedReviews?: number;
  /** The policy switch never answers. */
  readonly isCloseHung?: boolean;
  /** Reads of pushed objects never answer (until their signal aborts them, as the REST client's do). */
  readonly isReadHung?: boolean;
}

function setup(script: Script = {}) {
  const journalDir = mkdtempSync(join(tmpdir(), 'baton-pushing-'));
  dirs.push(journalDir);
  const { plan } = loadHandoffPlan(fixture);
  const clock = createSettlingFakeClock();
  const calls: string[] = [];
  const objects = [secret('planned-pw'), configMap];
  const expected: ConfinedObject[] = [
    { group: '', resource: 'secrets', expected: objects[0]! },
    { group: '', resource: 'configmaps', expected: objects[1]! },
  ];
  const confinement = planConfinement({
    name: 'baton-bootstrap-r1',
    runId: 'r1',
    username: SUBJECT,
    planDigest: `sha256:${'0'.repeat(64)}`,
    fieldManager: 'baton-bootstrap',
    objects: expected,
  });
  let reviews = 0;
  const operator = {
    server: 'https://127.0.0.1:1',
    objects: {
      read: async () => ({ metadata: { resourceVersion: '7' } }),
      replace: async () => {
        calls.push('close policy');
        return script.isCloseHung ? new Promise(() => {}) : {};
      },
    },
    rest: {
      read: async (ref: KubeObject, signal?: AbortSignal) => {
        calls.push(`read ${ref.kind}`);
        if (script.isReadHung)
          return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)));
        return script.held?.[ref.metadata.name] ?? objects.find((o) => o.metadata.name === ref.metadata.name);
      },
    },
    rbac: {
      deleteNamespacedRoleBinding: async (a: { namespace: string }) => void calls.push(`unbind ${a.namespace}`),
      deleteClusterRoleBinding: async () => void calls.push('unbind cluster'),
    },
  } as unknown as KubeClients;
  const denied = () =>
    Promise.reject(
      new ApiException(
        403,
        'Forbidden',
        JSON.stringify({ message: `secrets "pull" is forbidden: User "${SUBJECT}" cannot patch resource "secrets"` }),
        {},
      ),
    );
  const bootstrap = {
    server: operator.server,
    rest: {
      apply: (o: KubeObject, opts: { dryRun?: boolean }) => {
        calls.push(opts.dryRun ? 'probe write' : `push ${o.kind}`);
        return opts.dryRun ? denied() : Promise.resolve(o);
      },
    },
    authz: {
      createSelfSubjectAccessReview: async () => ({ status: { allowed: reviews++ < (script.allowedReviews ?? 0) } }),
    },
  } as unknown as KubeClients;
  const operatorSignal = new AbortController();
  const deps = fakeHandoffDeps(
    operator,
    { requestTimeoutMs: 2_000, confinementTimeoutMs: 5_000, signal: operatorSignal.signal },
    clock,
  );
  const run = new HandoffRun({ ...plan, journalDir }, deps);
  run.set = { objects: objects.map((object) => ({ object })) } as unknown as ManifestSet;
  run.rules = { cluster: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get'] }], namespaced: {} };
  run.ref = bootstrapRefFor('r1', 'baton-system', {
    cluster: run.rules.cluster,
    namespaced: { 'gitops-system': [] },
  });
  run.confinement = { plan: confinement, expected, probeDenied: true, installedAt: clock.now() };
  run.identity = {
    ...run.ref,
    token: 'not-a-token',
    username: SUBJECT,
    secretUid: 'u',
    secretResourceVersion: '1',
    jti: undefined,
    audiences: [],
    issuedAt: clock.now(),
    expiresAt: new Date(clock.now().getTime() + 600_000),
  };
  const set = run.set;
  const minted: Minted = {
    set,
    toPush: set,
    rules: run.rules,
    revision: 'c0ffee',
    confinement: run.confinement,
    ref: run.ref,
    identity: run.identity,
    bootstrap,
  };
  return { run, minted, clock, calls, operatorSignal };
}

describe('closeWriteWindow: the privilege ends with the push', () => {
  it('switches to deny-all and deletes every binding at once, then confirms as the token: writes and reads refused', async () => {
    const { run, minted, calls } = setup({ allowedReviews: 3 });
    await closeWriteWindow(run, minted);
    expect(calls.slice(0, 3).sort()).toEqual(['close policy', 'unbind cluster', 'unbind gitops-system']);
    const c = run.confinement!;
    // The first probe write was refused (by RBAC: the bindings were gone); reads were allowed for three polls of 20 ms.
    expect(c.closedAt!.getTime() - run.identity!.issuedAt.getTime()).toBe(0);
    expect(c.privilegeEndedAt!.getTime() - run.identity!.issuedAt.getTime()).toBe(60);
    const summary = credentialSummary(run, NOT_ENDED)!;
    expect(summary.writeWindowSeconds).toBe(0);
    expect(summary.privilegeWindowSeconds).toBe(0.06);
  });

  it('fails (so the run revokes at once) when the token keeps its reads past the confinement timeout', async () => {
    const { run, minted, clock } = setup({ allowedReviews: Number.POSITIVE_INFINITY });
    const t0 = clock.monotonicMs();
    await expect(closeWriteWindow(run, minted)).rejects.toThrow(
      /could not end the privilege of .* \(every write and read of the plan refused to the token did not happen within 5 s\)/,
    );
    expect(clock.monotonicMs() - t0).toBeLessThan(6_000);
    expect(run.confinement!.privilegeEndedAt).toBeUndefined();
    // Without a confirmed end, the privilege window is the credential's whole life.
    expect(credentialSummary(run, NOT_ENDED)!.privilegeWindowSeconds).toBe(600);
  });

  it('is bounded by the request deadline when the API server never answers the switch', async () => {
    const { minted, run, clock } = setup({ isCloseHung: true });
    const t0 = clock.monotonicMs();
    await expect(closeWriteWindow(run, minted)).rejects.toThrow(/closing the confinement got no answer within 2 s/);
    expect(clock.monotonicMs() - t0).toBe(2_000);
  });
});

describe('verifyAfterClose: the post-close check', () => {
  it('reads every pushed object with the operator credential and records how many matched', async () => {
    const { run, calls } = setup();
    run.confinement!.closedAt = run.clock.now();
    await verifyAfterClose(run, run.confinement!);
    expect(calls).toEqual(['read Secret', 'read ConfigMap']);
    expect(run.confinement!.verifiedObjects).toBe(2);
  });

  it('names a Secret whose value was rewritten, never the value', async () => {
    const { run } = setup({ held: { pull: secret('thief-pw') } });
    run.confinement!.closedAt = run.clock.now();
    const err = await verifyAfterClose(run, run.confinement!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TamperingError);
    expect((err as Error).message).toContain('Secret/gitops-system/pull (data[password])');
    // Noted on the run for the repair and the record: the object and its fields, never a value.
    expect(run.tampering?.mismatches).toEqual([{ object: 'Secret/gitops-system/pull', fields: ['data[password]'] }]);
    expect(JSON.stringify(run.tampering)).not.toContain(Buffer.from('thief-pw').toString('base64'));
    expect((err as Error).message).not.toContain(Buffer.from('thief-pw').toString('base64'));
    expect((err as Error).message).not.toContain('thief-pw');
    expect(run.confinement!.verifiedAt).toBeUndefined();
  });

  it('after a push, a difference aborts the run (it revokes at once and fails naming the object)', async () => {
    const { run, minted, calls } = setup({
      held: { source: { ...configMap, data: { url: 'https://evil.example/repo' } } },
    });
    await push(run, minted);
    await run.closing;
    expect(calls.filter((c) => c.startsWith('push'))).toEqual(['push Secret', 'push ConfigMap']);
    expect(run.signal.aborted).toBe(true);
    expect(String((run.signal.reason as Error).message)).toContain('ConfigMap/gitops-system/source (data.url)');
    expect(run.signal.reason).toBeInstanceOf(TamperingError);
    run.fail(new DOMException('aborted', 'AbortError'));
    expect(blamedStepOf(run, NOT_ENDED)).toBe('post-close-check');
    expect(outcomeOf(run, NOT_ENDED)).toBe('tampered');
  });

  it('Ctrl-C right after the push ends a hung post-close check at once: the close is done, revoke need not wait', async () => {
    const { run, minted, clock, operatorSignal } = setup({ isReadHung: true });
    await push(run, minted);
    const closing = run.closing!;
    // Let the close finish; the check's reads then hang as an API server that stopped answering reads would.
    await clock.sleep(100);
    expect(run.confinement!.closedAt).toBeDefined();
    const t0 = clock.monotonicMs();
    operatorSignal.abort(new Error('SIGINT'));
    await closing;
    expect(clock.monotonicMs() - t0).toBe(0);
    expect(run.confinement!.verifiedAt).toBeUndefined();
    expect(run.tampering).toBeUndefined();
  });
});
