import { type HandoffStep, type HandoffSummary, runHandoff } from '@baton/core';
import { TimeoutError } from '@baton/errors';
import { clientsFromKubeConfig, findBootstrapLeftovers } from '@baton/kube';
import { type BatonControllerEnv, createBatonControllerEnv } from '@baton/testbed';
import { type Cluster, startCluster } from '@baton/testenv';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, confinementsLeft } from '../../support/kube.js';

// Issue 18, part 3: the API server stops answering (SIGSTOP) as the push ends, while the write window is being closed.
// Every client request has a deadline, the close runs under one, and revoke does not wait on it: the run gives up on
// the close, reaches revoke while the API server is still stopped, keeps retrying it, and revokes and proves once the
// API server is back (SIGCONT), all within `--timeout` (the caller's signal here). Before the fix, the close's request
// hung until SIGCONT and revoke started only then.
const REQUEST_MS = 4_000;
const STOPPED_MS = 25_000;
const TIMEOUT_MS = 12_000;
let cluster: Cluster;
let env: BatonControllerEnv;
let summary: HandoffSummary;
let stoppedAt = 0;
let continuedAt = 0;
let revokeEnteredAt = 0;
let finishedAt = 0;
let apiserverPid = 0;

beforeAll(async () => {
  cluster = await startCluster({ node: 'real' });
  env = await createBatonControllerEnv({ kubeconfigPath: cluster.kubeconfigPath, realNode: cluster.realNode });
  apiserverPid = cluster.pids['kube-apiserver']!;
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  const operator = clientsFromKubeConfig(kc, { requestTimeoutMs: REQUEST_MS });
  const { deps } = testHandoffDeps(env.loaded, cluster.kubeconfigPath, {
    operator,
    requestTimeoutMs: REQUEST_MS,
    // `baton up --timeout`: the CLI aborts the run's signal with a TimeoutError.
    signal: timeoutAfterTakeover(),
    onStep: async (step: HandoffStep) => {
      if (step === 'takeover') {
        // The push's last write has returned and the close has just started: stop the API server under it.
        process.kill(apiserverPid, 'SIGSTOP');
        stoppedAt = Date.now();
        setTimeout(() => {
          process.kill(apiserverPid, 'SIGCONT');
          continuedAt = Date.now();
        }, STOPPED_MS).unref();
      }
      if (step === 'revoke') revokeEnteredAt = Date.now();
    },
  });
  summary = await runHandoff(env.loaded, deps);
  finishedAt = Date.now();
}, 600_000);

afterAll(async () => {
  if (apiserverPid && !continuedAt) process.kill(apiserverPid, 'SIGCONT');
  await env?.stop();
  await cluster?.stop();
});

/** A signal aborted with a TimeoutError TIMEOUT_MS after the API server was stopped (as `--timeout` would). */
function timeoutAfterTakeover(): AbortSignal {
  const ac = new AbortController();
  const tick = setInterval(() => {
    if (stoppedAt && Date.now() - stoppedAt >= TIMEOUT_MS) {
      clearInterval(tick);
      ac.abort(new TimeoutError(`baton up --timeout reached`));
    }
  }, 100);
  tick.unref();
  return ac.signal;
}

describe('an API server that stalls during the close', () => {
  it('reaches revoke while the API server is still stopped (the close and its requests have deadlines)', () => {
    expect(stoppedAt).toBeGreaterThan(0);
    expect(revokeEnteredAt).toBeGreaterThan(stoppedAt);
    expect(revokeEnteredAt, 'revoke waited for the stalled close').toBeLessThan(stoppedAt + STOPPED_MS);
  });

  it('revokes and proves after SIGCONT, within the timeout, and says why it failed', async () => {
    expect(continuedAt).toBeGreaterThan(0);
    expect(summary.outcome).not.toBe('handed-off');
    // The first request to meet the stopped API server fails on its deadline (the takeover's read, or the close):
    // the run says the API server did not answer, not that a user aborted something.
    expect(summary.error).toMatch(/no answer from the API server in time|could not end the privilege|--timeout/);
    expect(summary.proof?.probeStatus).toBe(401);
    expect(summary.proof?.tokenReviewAuthenticated).toBe(false);
    // Revoke retried through the stop and finished soon after the API server came back (the proof waits out the
    // token cache, at most 10 s, plus a poll).
    expect(finishedAt - continuedAt).toBeLessThan(60_000);
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    expect(await findBootstrapLeftovers(operator, 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);
  });
});
