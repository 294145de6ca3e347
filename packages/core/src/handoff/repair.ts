import { TimeoutError } from '@baton/errors';
import {
  computeBootstrapRules,
  deleteWorkload,
  deleteWorkloadPods,
  describeObject,
  describeWorkload,
  restartState,
  selectedPods,
  type WorkloadRef,
  workloadSelector,
  workloadsOf,
} from '@baton/kube';
import { pollUntil, withDeadline } from '../clock.js';
import { type ManifestSet, setDigest } from '../manifest-set.js';
import { checkTakeover } from '../takeover.js';
import { confine, mint, scopeCheck } from './credential.js';
import { prove, revoke } from './ending.js';
import { fullFingerprint } from './fingerprint.js';
import { type Ending, revocationFailure, type Scoped } from './phases.js';
import { push } from './pushing.js';
import { HandoffRun, safeError, seconds, type TamperingState } from './run.js';
import { HandoffStep } from './types.js';
import { errorOf } from './verdict.js';

// Admission pins a planned Secret by type and keys, not by value: a thief holding the bootstrap token can rewrite a
// value during the push, and the post-close check finds it. By then the controller may already run on it. The repair
// leaves no thief value in effect: the planned values are pushed again by a second identity, minted and confined
// exactly as the first (the operator's credential still never pushes), verified by the same post-close check, and then
// every pushed workload's pods are replaced so none keeps running on a value read before. Replacing pods (a delete,
// which the workload's own controller answers from its template) changes no declared object, so the GitOps
// controller has nothing to revert and a later run nothing to undo. When the repair cannot be verified, the pushed
// workloads and the tampered Secrets are deleted: nothing runs, and no thief value stays in the cluster.

/**
 * Repairs what the post-close check found rewritten (see above), after the first credential is revoked and proven
 * (a thief's token for that identity dies with it). Never throws: what it did is noted on `run.tampering.repair`.
 * Returns why the repair identity's own revocation is not proven, when it is not: that fails the run as the first
 * identity's would.
 */
export async function repair(run: HandoffRun): Promise<string | undefined> {
  const t = run.tampering;
  const { set, revision } = run;
  if (!t || !set || !revision) return undefined;
  await run.enterSafely(HandoffStep.repair, { objects: t.mismatches.map((m) => m.object) });
  const tampered = new Set(t.mismatches.map((m) => m.object));
  const repush = set.objects.filter((m) => tampered.has(describeObject(m.object)));
  const workloads = workloadsOf(set.objects.map((m) => m.object));
  const { sub, scoped } = repairRun(run, set, revision, repush);
  const { verifiedAt: verified, ending } = await repushConfined(sub, scoped);
  const { proof } = ending.proof;
  const credential = sub.identity
    ? {
        subject: sub.identity.username,
        fingerprint: fullFingerprint(sub.identity.token),
        issuedAt: sub.identity.issuedAt.toISOString(),
        revokedAt: proof?.revokedAt.toISOString() ?? null,
        ...(sub.confinement?.closedAt
          ? { writeWindowSeconds: seconds(sub.confinement.closedAt.getTime() - sub.identity.issuedAt.getTime()) }
          : {}),
        ...(proof ? { tokenReviewAuthenticated: proof.review.authenticated } : {}),
      }
    : undefined;
  const base = {
    runId: sub.runId,
    ...(credential ? { credential } : {}),
    ...(sub.confinement ? { policyName: sub.confinement.plan.name } : {}),
    repushed: repush.map((m) => describeObject(m.object)),
  };
  if (verified) {
    const restart = await restartWorkloads(run, workloads);
    t.repair = {
      ...base,
      outcome: 'repaired',
      verifiedAt: verified.toISOString(),
      restarted: restart.restarted.map(describeWorkload),
      stopped: [],
      repairSeconds: seconds(run.clock.monotonicMs() - t.detectedMs),
      ...(restart.error ? { error: restart.error } : {}),
      note: repairedNote(base.repushed, restart.restarted, restart.error, t, run),
    };
  } else {
    const why = errorOf(sub, ending) ?? 'the repair was not verified';
    const stopped = await stopWorkloads(
      run,
      workloads,
      repush.filter((m) => m.object.kind === 'Secret'),
    );
    t.repair = {
      ...base,
      outcome: 'stopped',
      restarted: [],
      stopped: stopped.deleted,
      repairSeconds: seconds(run.clock.monotonicMs() - t.detectedMs),
      error: `${why}${stopped.error ? `; ${stopped.error}` : ''}`.slice(0, 2000),
      note: `the repair could not be verified (${why}); stopped instead: deleted ${stopped.deleted.join(', ') || 'nothing'}${stopped.error ? ` (${stopped.error})` : ''}; find who held the bootstrap credential, then rerun baton up to push them anew`,
    };
  }
  run.fact(
    `${t.repair.outcome}: ${t.repair.repushed.length} object(s) pushed again, ${t.repair.restarted.length} workload(s) restarted`,
  );
  run.log.warn(
    {
      outcome: t.repair.outcome,
      repushed: t.repair.repushed,
      restarted: t.repair.restarted,
      stopped: t.repair.stopped,
      repairSeconds: t.repair.repairSeconds,
    },
    'repaired the tampered objects',
  );
  // The repair identity's own revocation is part of the repair: an unproven one keeps its (closed) confinement.
  const failure = revocationFailure(ending);
  return failure ? `repair identity: ${failure}` : undefined;
}

/** A run of the same plan that pushes only `objects`, under an identity and a confinement of its own. */
function repairRun(
  run: HandoffRun,
  set: ManifestSet,
  revision: string,
  objects: ManifestSet['objects'],
): { sub: HandoffRun; scoped: Scoped } {
  const repairId = `${run.runId}-repair`;
  // Its steps are the repair step's inside: hooks and the step view see `repair`, not a second confine … prove.
  const { onStepDone: _done, onStep: _step, ...rest } = run.deps;
  const deps = { ...rest, newRunId: () => repairId, journal: run.journal };
  const sub = new HandoffRun(run.plan, deps, { repairOf: run.runId });
  const rules = computeBootstrapRules(
    objects.map((m) => m.object),
    set.objects.map((m) => m.object),
  );
  sub.set = set;
  sub.rules = rules;
  sub.revision = revision;
  sub.operatorName = run.operatorName;
  const toPush = { ...set, objects, digest: setDigest(objects) };
  return { sub, scoped: { set, toPush, rules, revision } };
}

/**
 * Confine, mint, scope check, push and the post-close check, as the first push; then revoke and prove that identity
 * too. Returns when the check found every object as planned (or undefined), and how the revoke and proof went.
 */
async function repushConfined(
  sub: HandoffRun,
  scoped: Scoped,
): Promise<{ verifiedAt: Date | undefined; ending: Ending }> {
  await sub.journalSafely('start', { repairOf: sub.repairOf, pid: sub.deps.actor.pid, host: sub.deps.actor.host });
  try {
    const minted = await mint(sub, await confine(sub, scoped));
    await scopeCheck(sub, minted);
    await push(sub, minted);
    await sub.closing;
    sub.signal.throwIfAborted();
  } catch (err) {
    sub.fail(err);
  } finally {
    sub.stopBudget();
  }
  const failed = (err: unknown) => ({ failure: safeError(err) });
  const revoked = await revoke(sub).catch(failed);
  const ending: Ending = { revoke: revoked, proof: await prove(sub, revoked).catch(failed) };
  sub.closeStep();
  const verifiedAt = sub.failure === undefined ? sub.confinement?.verifiedAt : undefined;
  await sub.journalSafely('finished', { outcome: verifiedAt ? 'repaired' : 'failed' });
  return { verifiedAt, ending };
}

/**
 * Replaces every pod of the pushed workloads, then waits (takeover timeout) until none of the old ones is left, the
 * new ones are Ready and the controller has taken over again. Returns what it restarted and what did not complete.
 */
async function restartWorkloads(
  run: HandoffRun,
  workloads: readonly WorkloadRef[],
): Promise<{ restarted: WorkloadRef[]; error?: string }> {
  const { operator } = run.deps;
  const old = new Map<WorkloadRef, string[]>();
  try {
    for (const w of workloads) old.set(w, await deleteWorkloadPods(operator, w));
    let reason = '';
    await pollUntil(
      async () => {
        for (const w of workloads) {
          const s = await restartState(operator, w, old.get(w) ?? []);
          if (!s.isDone) {
            reason = s.reason;
            return undefined;
          }
        }
        const rev = run.revision;
        const state = rev && run.set ? await checkTakeover(operator, run.plan, run.set, rev) : undefined;
        if (state) run.takeover = state;
        if (state && !state.isComplete) {
          reason = state.reason;
          return undefined;
        }
        return true;
      },
      {
        clock: run.clock,
        intervalMs: run.deps.pollIntervalMs ?? 250,
        timeoutMs: run.plan.takeover.timeoutSeconds * 1000,
        what: 'the pushed workloads restarted on the repaired objects (takeover.timeoutSeconds)',
      },
      () => reason,
    );
    if (run.takeover?.isComplete) run.controllerReadyAt = run.clock.now();
    return { restarted: [...workloads] };
  } catch (err) {
    return {
      restarted: [...old.keys()],
      error: `the restart did not complete: ${safeError(err)}${err instanceof TimeoutError ? '' : '; check the workloads'}`,
    };
  }
}

/**
 * Deletes every pushed workload and the tampered Secrets with the operator's credential, then waits until none of the
 * workloads' pods is left (a pod being deleted may still run).
 */
async function stopWorkloads(
  run: HandoffRun,
  workloads: readonly WorkloadRef[],
  secrets: ManifestSet['objects'],
): Promise<{ deleted: string[]; error?: string }> {
  const { operator } = run.deps;
  const requestMs = run.deps.requestTimeoutMs ?? 10_000;
  const deleted: string[] = [];
  const selectors: { namespace: string; selector: string }[] = [];
  try {
    for (const w of workloads) {
      const selector = await withDeadline(run.clock, requestMs, `reading ${describeWorkload(w)}`, () =>
        workloadSelector(operator, w),
      );
      if (selector) selectors.push({ namespace: w.namespace, selector });
      if (
        await withDeadline(run.clock, requestMs, `deleting ${describeWorkload(w)}`, () => deleteWorkload(operator, w))
      )
        deleted.push(describeWorkload(w));
    }
    for (const m of secrets) {
      const { name, namespace = '' } = m.object.metadata;
      await withDeadline(run.clock, requestMs, `deleting ${describeObject(m.object)}`, () =>
        operator.core.deleteNamespacedSecret({ namespace, name }),
      ).then(
        () => deleted.push(describeObject(m.object)),
        (err: unknown) => {
          if ((err as { code?: number }).code !== 404) throw err;
        },
      );
    }
    let left = 0;
    await pollUntil(
      async () => {
        left = 0;
        for (const s of selectors) left += (await selectedPods(operator, s.namespace, s.selector)).length;
        return left === 0 ? true : undefined;
      },
      {
        clock: run.clock,
        intervalMs: run.deps.pollIntervalMs ?? 250,
        timeoutMs: run.plan.takeover.timeoutSeconds * 1000,
        what: 'the stopped workloads without pods',
      },
      () => `${left} pod(s) left`,
    );
    return { deleted };
  } catch (err) {
    return { deleted, error: `the stop did not complete: ${safeError(err)}` };
  }
}

function repairedNote(
  repushed: readonly string[],
  restarted: readonly WorkloadRef[],
  error: string | undefined,
  t: TamperingState,
  run: HandoffRun,
): string {
  const took = seconds(run.clock.monotonicMs() - t.detectedMs);
  const what = `repaired in ${took} s: ${repushed.join(', ')} pushed again with the planned values by a second confined identity and verified, and the pods of ${restarted.map(describeWorkload).join(', ') || 'no workload'} replaced`;
  return error
    ? `${what}; but ${error}`
    : `${what}; no rewritten value is in effect; find who held the bootstrap credential, then rerun baton up to hand off`;
}
