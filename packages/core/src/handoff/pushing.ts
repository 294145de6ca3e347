import { TamperingError } from '@baton/errors';
import { checkPushedObjects, describeObject, ObjectWatch } from '@baton/kube';
import { pollUntil } from '../clock.js';
import { pushManifests } from '../push.js';
import { checkTakeover, type TakeoverState, takeoverRefs, watchedReader } from '../takeover.js';
import { closeWriteWindow } from './close.js';
import type { Minted, Pushed } from './phases.js';
import { type ConfinementState, type HandoffRun, seconds } from './run.js';
import { HandoffStep } from './types.js';

/**
 * Server-side-applies the set with the bootstrap token only, then starts closing the write window: the confinement is
 * switched to deny every write by the identity, and the close is confirmed by a denied re-apply of a planned object.
 * The close runs alongside the takeover wait (it is not on the credential's live window unless the controller is
 * faster); if it fails, the run is aborted and revokes at once. The token may still authenticate (the API server's
 * cache) while revoke and proof run, but it can write nothing.
 * @throws {KubeApiError} naming the object that failed.
 */
export async function push(run: HandoffRun, minted: Minted): Promise<Pushed> {
  const set = minted.toPush;
  await run.enter(HandoffStep.push, { objects: set.objects.length });
  await pushManifests(
    minted.bootstrap,
    set.objects.map((m) => m.object),
    {
      fieldManager: run.plan.push.fieldManager,
      force: run.repairOf !== undefined,
      clock: run.clock,
      signal: run.signal,
    },
  );
  const pushEndMs = run.clock.monotonicMs();
  run.closing = closeWriteWindow(run, minted)
    .then(() => verifyAfterClose(run, minted.confinement))
    .catch((err: unknown) => run.windowNotClosed.abort(err));
  return { ...minted, pushEndMs };
}

/**
 * The post-close check: once the identity can no longer write, reads every pushed object with the operator's
 * credential and compares it with the plan (see {@link checkPushedObjects}: Secrets by a digest of their values, held
 * in memory only; every other object by each field the plan declares). Admission pins a Secret's keys, not its values,
 * and may pin a large object only partly: this is where the rest is verified. Watches the run's signal (Ctrl-C, the
 * push budget): an aborted check ends the run without a verdict, and revoke starts at once.
 * @throws {TamperingError} naming every object that differs and its fields (never a value), with the finding noted
 * on the run (`run.tampering`): the run revokes, proves, repairs them ({@link repair}) and records `tampered`.
 */
export async function verifyAfterClose(run: HandoffRun, c: ConfinementState): Promise<void> {
  if (!c.closedAt) return;
  const r = await checkPushedObjects(run.deps.operator, c.expected, { signal: run.signal });
  if (r.mismatches.length > 0) {
    run.tampering = { detectedAt: run.clock.now(), detectedMs: run.clock.monotonicMs(), mismatches: r.mismatches };
    const list = r.mismatches.map((m) => `${m.object} (${m.fields.slice(0, 5).join(', ')})`).join('; ');
    const then = run.repairOf
      ? 'rewritten again during the repair'
      : "baton revokes the bootstrap credential, pushes the planned values again under a fresh confined credential and replaces the pushed workloads' pods";
    throw new TamperingError(
      `post-close check: ${r.mismatches.length} pushed object(s) differ from the plan ${c.plan.planDigest}: ${list}; someone holding the bootstrap credential wrote them during the push window; ${then}`,
      { details: { objects: r.mismatches.map((m) => ({ object: m.object, fields: m.fields })) } },
    );
  }
  c.verifiedAt = run.clock.now();
  c.verifiedObjects = r.checked;
  run.log.info({ objects: r.checked }, 'every pushed object matches the plan');
}

/**
 * Waits, with the operator's credential, until the controller has taken over: Available, the declared revision
 * applied, every pushed object owned (see {@link checkTakeover}).
 * @throws {TimeoutError} naming what was still missing at `takeover.timeoutSeconds`.
 */
export async function awaitTakeover(run: HandoffRun, pushed: Pushed): Promise<void> {
  await run.enter(HandoffStep.takeover);
  const { revision: rev, set } = pushed;
  const { operator } = run.deps;
  let last: TakeoverState | undefined;
  // Every object the check reads is listed once and then watched: each look below reads memory, not the apiserver.
  const watch = await ObjectWatch.open(operator.rest, takeoverRefs(run.plan, set), {
    signal: run.signal,
    onRetry: (ref, message) => run.log.debug({ object: describeObject(ref), message }, 'takeover watch reopened'),
  });
  const reader = watchedReader(watch, operator, run.clock);
  let r: Awaited<ReturnType<typeof pollUntil<TakeoverState>>>;
  try {
    r = await pollUntil(
      async () => {
        last = await checkTakeover(operator, run.plan, set, rev, reader);
        run.takeover = last;
        return last.isComplete ? last : undefined;
      },
      {
        clock: run.clock,
        intervalMs: run.deps.pollIntervalMs ?? 250,
        timeoutMs: run.plan.takeover.timeoutSeconds * 1000,
        what: 'controller takeover (takeover.timeoutSeconds)',
        signal: run.signal,
      },
      () => last?.reason ?? '',
    );
  } finally {
    await watch.close();
  }
  run.controllerReadyAt = run.clock.now();
  run.readinessSeconds = seconds(run.clock.monotonicMs() - pushed.pushEndMs);
  // The takeover counts only once the identity can write nothing more; Ctrl-C or the budget must not wait for it.
  await untilAborted(run.closing, run.signal);
  run.signal.throwIfAborted();
  run.fact(`revision ${rev.slice(0, 12)} applied; ${r.value.ownedObjects.length} objects owned by the controller`);
  run.log.info(
    {
      readinessSeconds: run.readinessSeconds,
      owned: r.value.ownedObjects.length,
      notTakenOver: r.value.notTakenOver,
      // Sent by the wait itself (watches, reads it could not answer from them, pod lists): what it cost the apiserver.
      takeoverRequests: reader.requests(),
      takeoverObjects: watch.size,
    },
    'controller took over',
  );
}

/** Waits for `p` (which never rejects), or until `signal` aborts, whichever is first. */
function untilAborted(p: Promise<void> | undefined, signal: AbortSignal): Promise<void> {
  if (!p || signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    p.then(done, done);
  });
}
