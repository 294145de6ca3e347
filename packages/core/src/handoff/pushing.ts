import { ConfinementError } from '@baton/errors';
import { checkPushedObjects, closeConfinement, probeClosed } from '@baton/kube';
import { pollUntil } from '../clock.js';
import { pushManifests } from '../push.js';
import { checkTakeover, type TakeoverState } from '../takeover.js';
import { type HandoffRun, seconds } from './run.js';
import { HandoffStep } from './types.js';

/**
 * Server-side-applies the set with the bootstrap token only, then starts closing the write window: the confinement is
 * switched to deny every write by the identity, and the close is confirmed by a denied re-apply of a planned object.
 * The close runs alongside the takeover wait (it is not on the credential's live window unless the controller is
 * faster); if it fails, the run is aborted and revokes at once. The token may still authenticate (the API server's
 * cache) while revoke and proof run, but it can write nothing.
 * @throws {KubeApiError} naming the object that failed.
 */
export async function push(run: HandoffRun): Promise<void> {
  const set = run.set!;
  await run.enter(HandoffStep.push, { objects: set.objects.length });
  await pushManifests(
    run.bootstrap!,
    set.objects.map((m) => m.object),
    { fieldManager: run.plan.push.fieldManager, clock: run.clock, signal: run.signal },
  );
  run.pushEndMs = run.clock.monotonicMs();
  run.closing = closeWriteWindow(run)
    .then(() => verifyAfterClose(run))
    .catch((err: unknown) => run.windowNotClosed.abort(err));
}

/**
 * Switches the confinement to deny-all and waits until a planned write by the identity is denied; `closedAt` is that
 * first denial (the policy takes a moment to reach the admission chain).
 * @throws {ConfinementError} when the switch fails or is not effective within the confinement timeout.
 */
export async function closeWriteWindow(run: HandoffRun): Promise<void> {
  const c = run.confinement;
  if (!c?.installedAt || c.closedAt) return;
  const planned = run.set!.objects[0]!.object;
  const closeStart = run.clock.monotonicMs();
  try {
    await closeConfinement(run.deps.operator, c.plan);
    await pollUntil(
      async () => {
        const p = await probeClosed(run.bootstrap!, c.plan, planned);
        return p.denied ? p : undefined;
      },
      {
        clock: run.clock,
        intervalMs: 20,
        timeoutMs: run.deps.confinementTimeoutMs ?? 10_000,
        what: 'the closed confinement denying a planned write',
      },
    );
  } catch (err) {
    throw new ConfinementError(
      `could not close the write window of ${c.plan.subject} after the push (${(err as Error).message}); revoking the credential now instead of after the takeover`,
      { cause: err },
    );
  }
  c.closedAt = run.clock.now();
  c.closeMs = Math.round(run.clock.monotonicMs() - closeStart);
  run.fact(
    `${run.set!.objects.length} objects pushed; writes denied ${seconds(c.closedAt.getTime() - run.identity!.issuedAt.getTime())} s after issue`,
  );
  run.log.info(
    { policy: c.plan.name, writeWindowSeconds: seconds(c.closedAt.getTime() - run.identity!.issuedAt.getTime()) },
    'closed the write window',
  );
}

/**
 * The post-close check: once the identity can no longer write, reads every pushed object with the operator's
 * credential and compares it with the plan (see {@link checkPushedObjects}: Secrets by a digest of their values, held
 * in memory only; every other object by each field the plan declares). Admission pins a Secret's keys, not its values,
 * and may pin a large object only partly: this is where the rest is verified.
 * @throws {ConfinementError} naming every object that differs and its fields (never a value): the run fails closed
 * (revoke, prove, record `failed`, no receipt).
 */
export async function verifyAfterClose(run: HandoffRun): Promise<void> {
  const c = run.confinement;
  if (!c?.closedAt) return;
  const r = await checkPushedObjects(run.deps.operator, c.expected);
  if (r.mismatches.length > 0) {
    const list = r.mismatches.map((m) => `${m.object} (${m.fields.slice(0, 5).join(', ')})`).join('; ');
    throw new ConfinementError(
      `post-close check: ${r.mismatches.length} pushed object(s) differ from the plan ${c.plan.planDigest}: ${list}; someone wrote them during the push window (the bootstrap credential is revoked now); inspect them, restore them from the plan, then rerun`,
      { details: { objects: r.mismatches.map((m) => m.object) } },
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
export async function awaitTakeover(run: HandoffRun): Promise<void> {
  await run.enter(HandoffStep.takeover);
  const rev = run.revision!;
  let last: TakeoverState | undefined;
  const r = await pollUntil(
    async () => {
      last = await checkTakeover(run.deps.operator, run.plan, run.set!, rev);
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
  run.controllerReadyAt = run.clock.now();
  run.readinessSeconds = seconds(run.clock.monotonicMs() - run.pushEndMs!);
  // The takeover counts only once the identity can write nothing more.
  await run.closing;
  run.signal.throwIfAborted();
  run.fact(`revision ${rev.slice(0, 12)} applied; ${r.value.ownedObjects.length} objects owned by the controller`);
  run.log.info(
    { readinessSeconds: run.readinessSeconds, owned: r.value.ownedObjects.length, notTakenOver: r.value.notTakenOver },
    'controller took over',
  );
}
