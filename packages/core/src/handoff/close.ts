// The close of the write window, in one place: after the push, the confinement denies the identity every write and
// its bindings go, confirmed as the token itself ({@link closeWriteWindow}); before the revoke, a run that never got
// that far closes what a token might still use ({@link closeBeforeRevoke}).
import { ConfinementError } from '@baton/errors';
import {
  type ConfinementProbe,
  closeConfinement,
  isAllowed,
  planReads,
  probeClosed,
  unbindBootstrapIdentity,
} from '@baton/kube';
import { pollUntil, withDeadline } from '../clock.js';
import type { Minted } from './phases.js';
import { type HandoffRun, safeError, seconds } from './run.js';

/**
 * Ends the credential's privilege as soon as the push's last write returned, with the operator's credential and under
 * deadlines: switches the confinement to deny-all and, alongside, deletes the identity's RoleBindings and
 * ClusterRoleBinding (the RBAC authorizer drops them within milliseconds; the token keeps authenticating, for the
 * API server's 10 s cache, until the revocation). Then confirms as the token itself: a re-apply of a planned object
 * is refused (by the closed policy or by RBAC) — `closedAt`, the end of the write window — and a
 * SelfSubjectAccessReview of `get` on every planned Secret and the first planned object is denied —
 * `privilegeEndedAt`, the end of the privilege window.
 * @throws {ConfinementError} when the switch, the unbinding or either confirmation fails within the confinement
 * timeout.
 */
export async function closeWriteWindow(run: HandoffRun, minted: Minted): Promise<void> {
  const c = minted.confinement;
  if (!c.installedAt || c.closedAt) return;
  const { operator } = run.deps;
  const { bootstrap } = minted;
  const objects = minted.toPush.objects.map((m) => m.object);
  const [planned] = objects;
  if (!planned)
    throw new ConfinementError(`nothing was pushed: no planned object to confirm the close of ${c.plan.name} with`);
  const reads = planReads(
    objects,
    minted.set.objects.map((m) => m.object),
  );
  const requestMs = run.deps.requestTimeoutMs ?? 10_000;
  const bounded = <T>(what: string, call: () => Promise<T>) => withDeadline(run.clock, requestMs, what, call);
  const closeStart = run.clock.monotonicMs();
  let ended: { readonly closedAt: Date; readonly privilegeEndedAt: Date };
  try {
    await Promise.all([
      bounded('closing the confinement', () => closeConfinement(operator, c.plan)),
      bounded('deleting the bootstrap bindings', () => unbindBootstrapIdentity(operator, minted.ref)),
    ]);
    const r = await pollUntil(
      async () => {
        if (!c.closedAt) {
          const p = await bounded('a planned write with the token', () => probeClosed(bootstrap, c.plan, planned));
          if (p.denied || isRefusedByRbac(p, c.plan.subject)) c.closedAt = run.clock.now();
        }
        if (!c.privilegeEndedAt) {
          const allowed = await bounded('an access review with the token', () =>
            Promise.all(reads.map((r) => isAllowed(bootstrap, r))),
          );
          if (!allowed.includes(true)) c.privilegeEndedAt = run.clock.now();
        }
        return c.closedAt && c.privilegeEndedAt
          ? { closedAt: c.closedAt, privilegeEndedAt: c.privilegeEndedAt }
          : undefined;
      },
      {
        clock: run.clock,
        intervalMs: 20,
        timeoutMs: run.deps.confinementTimeoutMs ?? 10_000,
        what: 'every write and read of the plan refused to the token',
      },
    );
    ended = r.value;
  } catch (err) {
    throw new ConfinementError(
      `could not end the privilege of ${c.plan.subject} after the push (${(err as Error).message}); revoking the credential now instead of after the takeover`,
      { cause: err },
    );
  }
  c.closeMs = Math.round(run.clock.monotonicMs() - closeStart);
  const issued = minted.identity.issuedAt.getTime();
  const writeWindowSeconds = seconds(ended.closedAt.getTime() - issued);
  const privilegeWindowSeconds = seconds(ended.privilegeEndedAt.getTime() - issued);
  run.fact(
    `${objects.length} objects pushed; writes denied ${writeWindowSeconds} s and reads ${privilegeWindowSeconds} s after issue`,
  );
  run.log.info({ policy: c.plan.name, writeWindowSeconds, privilegeWindowSeconds }, 'closed the write window');
}

// Once the bindings are gone, RBAC refuses the write before admission sees it: that ends the window as surely.
function isRefusedByRbac(p: ConfinementProbe, subject: string): boolean {
  return p.status === 403 && p.message.includes(`User "${subject}" cannot`);
}

/**
 * Before the revoke: waits for the close the push started (it never throws), no longer than one request's deadline (an
 * API server that stalled mid-close must not hold the revoke); then, when no close was confirmed and a token may exist,
 * seen or not, switches the policy to deny-all. A TokenRequest whose answer was lost may have left a live token that
 * the plan-shaped policy would still let write the planned objects. Never throws.
 */
export async function closeBeforeRevoke(run: HandoffRun): Promise<void> {
  const requestMs = run.deps.requestTimeoutMs ?? 10_000;
  const { closing, confinement: c } = run;
  if (closing)
    await withDeadline(run.clock, requestMs, 'the close after the push', () => closing).catch(() =>
      run.log.warn('the close after the push did not finish; revoking anyway'),
    );
  if (!c?.installedAt || c.closedAt || !run.ref) return;
  await withDeadline(run.clock, requestMs, 'closing the confinement', () => closeConfinement(run.deps.operator, c.plan))
    .then(() => {
      c.closedAt = run.clock.now();
    })
    .catch((err: unknown) => run.log.error({ err: safeError(err) }, 'could not close the confinement; revoking'));
}
