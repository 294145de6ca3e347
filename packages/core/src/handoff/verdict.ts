// How a run ended, from what its pushing part noted on the run and what its ending part returned (./phases.ts
// Ending): the outcome, the reasons, the error code and the step to blame, as the summary and the audit record say.
import { HandoffOutcome } from '@baton/audit';
import { ErrorCode, isBatonError, TimeoutError } from '@baton/errors';
import { type Ending, revocationFailure } from './phases.js';
import { type HandoffRun, safeError } from './run.js';

/**
 * The outcome: tampered (whatever the repair did), failed, aborted (the operator's signal) or handed off; an unproven
 * revocation or an unwritten record fails it.
 */
export function outcomeOf(run: HandoffRun, ending: Ending): HandoffOutcome {
  if (run.tampering) return HandoffOutcome.tampered;
  if (run.failure !== undefined)
    return isAbort(run.failure, run.deps.signal) ? HandoffOutcome.aborted : HandoffOutcome.failed;
  if (revocationFailure(ending) || ending.record?.failure) return HandoffOutcome.failed;
  return HandoffOutcome.handedOff;
}

/** Every reason the run did not hand off, joined. */
export function errorOf(run: HandoffRun, ending: Ending): string | undefined {
  const parts = [
    run.failure !== undefined ? safeError(run.failure) : undefined,
    run.tampering?.repair?.note,
    revocationFailure(ending),
    ending.record?.failure,
  ].filter((x): x is string => x !== undefined);
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** The error's stable code: the failure's own, else revocation (revoke or prove failed), else internal. */
export function errorCodeOf(run: HandoffRun, ending: Ending): ErrorCode | undefined {
  if (run.tampering) return ErrorCode.tampered;
  if (run.failure !== undefined) return isBatonError(run.failure) ? run.failure.code : ErrorCode.internal;
  if (revocationFailure(ending)) return ErrorCode.revocation;
  if (ending.record?.failure) return ErrorCode.internal;
  return undefined;
}

/** The step to blame: where the pushing part failed, else revoke or prove, else record. */
export function blamedStepOf(run: HandoffRun, ending: Ending): string | undefined {
  if (run.failedStep) return run.failedStep;
  if (revocationFailure(ending)) return ending.revoke.revoked ? 'prove' : 'revoke';
  if (ending.record?.failure) return 'record';
  return undefined;
}

// A deadline (`baton up --timeout`) is a failure; an operator's signal is an abort.
function isAbort(err: unknown, signal: AbortSignal | undefined): boolean {
  if (err instanceof TimeoutError) return false;
  return signal?.aborted === true && (err === signal.reason || (err as Error)?.name === 'AbortError');
}
