import { probeToken, removeConfinement, reviewToken, revokeBootstrapIdentity } from '@baton/kube';
import { pollUntil, retryUntil, withDeadline } from '../clock.js';
import { closeBeforeRevoke } from './close.js';
import type { ProofOutcome, RevokeOutcome } from './phases.js';
import { type ConfinementState, type HandoffRun, type ProofState, safeError, seconds } from './run.js';
import { HandoffStep } from './types.js';

// The steps below run on every path (success, failure, timeout, budget, signal, exception) with the operator's
// credential and no run signal. None of them throws: a journal that cannot be written, a hook that fails or an API
// server that stops answering for a while must not skip a revoke; each returns what it did and what it could not.

/**
 * Closes the write window if the push did not ({@link closeBeforeRevoke}), then deletes the throwaway Secret (the token
 * stops authenticating within the API server's 10 s cache), the ServiceAccount and its RBAC. A failing revoke is
 * retried with backoff for `revokeRetryMs`, never past the token's own expiry; each request is bounded, so a hung API
 * server is retried too.
 * Without a minted token, a confinement is removed at once (there is nothing for it to confine).
 */
export async function revoke(run: HandoffRun): Promise<RevokeOutcome> {
  if (!run.ref && !run.confinement) return {};
  await run.enterSafely(HandoffStep.revoke);
  const { operator } = run.deps;
  const requestMs = run.deps.requestTimeoutMs ?? 10_000;
  const c = run.confinement;
  await closeBeforeRevoke(run);
  let outcome: RevokeOutcome = {};
  if (run.ref) {
    const ref = run.ref;
    const expiresMs = run.identity ? run.identity.expiresAt.getTime() - run.clock.now().getTime() : 0;
    const retryMs = Math.min(run.deps.revokeRetryMs ?? 120_000, Math.max(expiresMs, run.identity ? 0 : 30_000));
    try {
      const revoked = await retryUntil(
        run.clock,
        run.clock.monotonicMs() + retryMs,
        () =>
          withDeadline(run.clock, requestMs * 3, 'revoking the bootstrap credential', () =>
            revokeBootstrapIdentity(operator, ref, () => run.clock.now()),
          ),
        (err, n) => run.log.warn({ attempt: n, err: safeError(err) }, 'revoke failed; retrying'),
      );
      // A run killed from here on is completed by the next one, which needs when the token's Secret went.
      await run.journalSafely('revoked', {
        secretDeletedAt: revoked.secretDeletedAt.toISOString(),
        ...(revoked.secret ? { secretUid: revoked.secret.uid } : {}),
      });
      run.log.info({ deleted: revoked.deleted.length }, 'revoked bootstrap credential');
      run.fact(`${revoked.deleted.length} objects deleted, the bound Secret first`);
      outcome = { revoked };
    } catch (err) {
      const expiry = run.identity ? `; the token expires by itself at ${run.identity.expiresAt.toISOString()}` : '';
      outcome = {
        failure: `revocation failed: ${safeError(err)}${expiry}; run baton revoke once the API server answers`,
      };
    }
  }
  if (!run.identity && c) {
    // No token was seen. Had one been requested, its response may have been lost with the token live: then only a
    // proven deletion of its bound Secret lets the confinement go; otherwise it stays, denying every write.
    if (!run.ref || outcome.revoked) await removeConfinementSafely(run, c);
    else keepConfinement(run, 'the revocation failed after a token request whose answer baton never saw');
  }
  return outcome;
}

/**
 * Proves the revocation with the token itself: polls until the API server refuses it (401; it caches successful
 * checks for 10 s), then asks TokenReview. Once proven, the confinement is no longer needed and is deleted; an
 * unproven revocation leaves it in place, denying every write until the token expires.
 */
export async function prove(run: HandoffRun, { revoked }: RevokeOutcome): Promise<ProofOutcome> {
  const identity = run.identity;
  if (!identity || !revoked) {
    if (run.confinement?.installedAt && identity) keepConfinement(run, 'the revocation failed');
    return {};
  }
  await run.enterSafely(HandoffStep.prove);
  const { operator } = run.deps;
  const requestMs = run.deps.requestTimeoutMs ?? 10_000;
  let outcome: ProofOutcome;
  try {
    const deletedMs = run.clock.monotonicMs();
    const r = await pollUntil(
      async () => {
        const status = await withDeadline(run.clock, requestMs, 'a request with the revoked token', () =>
          probeToken(operator, identity.token),
        ).catch(() => 0);
        return status === 401 ? status : undefined;
      },
      {
        clock: run.clock,
        intervalMs: Math.max(run.deps.pollIntervalMs ?? 250, 500),
        timeoutMs: run.deps.proofTimeoutMs ?? 30_000,
        what: 'the revoked token being refused (401)',
      },
    );
    const revokedAt = run.clock.now();
    const proofWaitSeconds = seconds(run.clock.monotonicMs() - deletedMs);
    const review = await withDeadline(run.clock, requestMs, 'TokenReview', () => reviewToken(operator, identity.token));
    const proof: ProofState = { probeStatus: r.value, review, revokedAt, provedAt: run.clock.now(), proofWaitSeconds };
    outcome = review.authenticated
      ? { proof, failure: 'TokenReview still authenticates the revoked token' }
      : { proof };
    run.fact(`first 401 after ${proofWaitSeconds} s; TokenReview authenticated=${review.authenticated}`);
    run.log.info(
      { probeStatus: r.value, tokenReviewAuthenticated: review.authenticated, proofWaitSeconds },
      'proved revocation',
    );
  } catch (err) {
    outcome = { failure: `proof failed: ${safeError(err)}` };
  }
  if (outcome.failure) {
    run.log.error({ err: outcome.failure }, 'bootstrap credential revocation not proven');
    keepConfinement(run, 'the revocation is not proven');
  } else if (run.confinement) await removeConfinementSafely(run, run.confinement);
  return outcome;
}

function keepConfinement(run: HandoffRun, why: string): void {
  const c = run.confinement;
  if (!c?.installedAt) return;
  c.keptBecause = `${why}: policy ${c.plan.name} is kept and denies every write by ${c.plan.subject}; the next run or baton revoke removes it`;
}

async function removeConfinementSafely(run: HandoffRun, c: ConfinementState): Promise<void> {
  try {
    await retryUntil(run.clock, run.clock.monotonicMs() + 30_000, () =>
      withDeadline(run.clock, run.deps.requestTimeoutMs ?? 10_000, 'removing the confinement', () =>
        removeConfinement(run.deps.operator, c.plan.name),
      ),
    );
    c.removedAt = run.clock.now();
  } catch (err) {
    c.keptBecause = `could not delete policy ${c.plan.name} (${safeError(err)}); it denies every write by ${c.plan.subject}; baton revoke removes it`;
    run.log.error({ err: safeError(err) }, 'could not remove the confinement');
  }
}
