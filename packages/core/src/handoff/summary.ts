// What a run returns to its caller (the summary `baton up` prints and the Pulumi component records), built from the
// run as it ended. The audit record, what the log keeps, is ./record.ts.
import { flattenRules } from '@baton/kube';
import type { TakeoverState } from '../takeover.js';
import { fullFingerprint } from './fingerprint.js';
import type { Ending } from './phases.js';
import { type HandoffRun, POST_CLOSE_CHECK, round, seconds, type TamperingState } from './run.js';
import type { ConfinementSummary, HandoffSummary, TamperingSummary } from './types.js';
import { blamedStepOf, errorCodeOf, errorOf, outcomeOf } from './verdict.js';

/** The summary's view of a rewrite the post-close check found, and of its repair. */
export function tamperingSummary(t: TamperingState): TamperingSummary {
  return {
    detectedBy: POST_CLOSE_CHECK,
    detectedAt: t.detectedAt.toISOString(),
    objects: t.mismatches.map((m) => ({ object: m.object, fields: m.fields })),
    ...(t.repair ? { repair: t.repair } : {}),
  };
}

/** The summary's view of the confinement, once one was planned. */
export function confinementSummary(run: HandoffRun): ConfinementSummary | undefined {
  const c = run.confinement;
  if (!c) return undefined;
  return {
    policyName: c.plan.name,
    planDigest: c.plan.planDigest,
    subject: c.plan.subject,
    allowed: c.plan.allowed,
    validationCount: c.plan.validationCount,
    policyBytes: c.plan.policyBytes,
    partlyPinned: c.plan.partlyPinned,
    probeDenied: c.probeDenied,
    installedAt: c.installedAt?.toISOString() ?? null,
    closedAt: c.closedAt?.toISOString() ?? null,
    removedAt: c.removedAt?.toISOString() ?? null,
    ...(c.activeWaitMs !== undefined ? { activeWaitSeconds: seconds(c.activeWaitMs) } : {}),
    ...(c.probeMs !== undefined ? { probeSeconds: seconds(c.probeMs) } : {}),
    ...(c.closeMs !== undefined ? { closeSeconds: seconds(c.closeMs) } : {}),
    ...(c.keptBecause ? { kept: c.keptBecause } : {}),
    ...(c.verifiedAt ? { verifiedAt: c.verifiedAt.toISOString(), verifiedObjects: c.verifiedObjects ?? 0 } : {}),
  };
}

/** The summary's view of the credential, once one was minted. */
export function credentialSummary(run: HandoffRun, ending: Ending): HandoffSummary['credential'] {
  const id = run.identity;
  if (!id) return undefined;
  const revokedAt = ending.proof.proof?.revokedAt;
  const closedAt = run.confinement?.closedAt;
  const privilegeEndedAt = run.confinement?.privilegeEndedAt;
  const end = (revokedAt ?? id.expiresAt).getTime();
  return {
    subject: id.username,
    fingerprint: fullFingerprint(id.token),
    jti: id.jti,
    issuedAt: id.issuedAt.toISOString(),
    expiresAt: id.expiresAt.toISOString(),
    revokedAt: revokedAt?.toISOString() ?? null,
    secretDeletedAt: ending.revoke.revoked?.secretDeletedAt.toISOString() ?? null,
    liveSeconds: seconds(end - id.issuedAt.getTime()),
    // Without a closed confinement, the credential could write for as long as it authenticated.
    writeWindowSeconds: seconds(Math.min(closedAt?.getTime() ?? end, end) - id.issuedAt.getTime()),
    // Without a confirmed denial, the credential held its rules for as long as it authenticated.
    privilegeWindowSeconds: seconds(Math.min(privilegeEndedAt?.getTime() ?? end, end) - id.issuedAt.getTime()),
    rules: flattenRules(run.rules ?? { cluster: [], namespaced: {} }),
  };
}

/** The fields every summary of the run carries. */
export function summaryFrame(run: HandoffRun) {
  return {
    runId: run.runId,
    cluster: { name: run.plan.cluster.name, server: run.deps.operator.server },
    operator: run.operatorName,
    leftoversRemoved: run.leftoversRemoved,
    ...(run.suspicious.length > 0 ? { suspicious: run.suspicious } : {}),
    stepDurationsMs: run.durations,
  };
}

/** The summary of a run that went through the pushing part (whatever its outcome). */
export function finalSummary(run: HandoffRun, ending: Ending): HandoffSummary {
  const credential = credentialSummary(run, ending);
  const confinement = confinementSummary(run);
  const step = blamedStepOf(run, ending);
  const error = errorOf(run, ending);
  const proved = ending.proof.proof;
  const proof = proved
    ? {
        probeStatus: proved.probeStatus,
        tokenReviewAuthenticated: proved.review.authenticated,
        provedAt: proved.provedAt.toISOString(),
        proofWaitSeconds: proved.proofWaitSeconds,
      }
    : undefined;
  const errorCode = errorCodeOf(run, ending);
  const audit = ending.record?.audit;
  return {
    ...summaryFrame(run),
    outcome: outcomeOf(run, ending),
    ...(step ? { failedStep: step } : {}),
    ...(error ? { error } : {}),
    ...(error && errorCode ? { errorCode } : {}),
    ...(run.tampering ? { tampering: tamperingSummary(run.tampering) } : {}),
    ...(run.revision ? { revision: run.revision } : {}),
    ...(credential ? { credential } : {}),
    ...(confinement ? { confinement } : {}),
    ...(proof ? { proof } : {}),
    ...(run.readinessSeconds !== undefined ? { readinessSeconds: run.readinessSeconds } : {}),
    ...(run.readinessSeconds !== undefined && credential && proof
      ? { overheadSeconds: round(credential.liveSeconds - run.readinessSeconds - proof.proofWaitSeconds) }
      : {}),
    ...(run.takeover ? { takeover: takeoverSummary(run.takeover) } : {}),
    totalSeconds: run.elapsedSeconds(),
    ...(audit ? { audit } : {}),
  };
}

/** The summary's view of a takeover check. */
export function takeoverSummary(state: TakeoverState): NonNullable<HandoffSummary['takeover']> {
  return {
    revisionSeen: state.revisionSeen,
    ownedObjects: state.ownedObjects,
    notTakenOver: state.notTakenOver,
    pushOnly: state.pushOnly,
  };
}
