import type { ConfinementSummary, HandoffSummary, Receipt } from '@baton/core';
import type { RbacRule } from '@baton/kube';

/** The bootstrap credential of a handoff, as recorded (never the token). */
export interface CredentialReceipt {
  /** The bootstrap ServiceAccount's username. */
  readonly subject: string;
  readonly fingerprint: string;
  readonly jti: string | null;
  readonly issuedAt: string;
  readonly expiresAt: string;
  /** When the API server first refused the token. */
  readonly revokedAt: string | null;
  /** When the throwaway Secret's deletion was acknowledged. */
  readonly secretDeletedAt: string | null;
  /** Seconds from issue until the API server refused the token. */
  readonly liveSeconds: number;
  /** Seconds from issue until admission denied every write by the credential (null when never confined). */
  readonly writeWindowSeconds: number | null;
  /** Seconds from issue until the credential was authorized for nothing of the plan (null when not recorded). */
  readonly privilegeWindowSeconds: number | null;
  readonly rules: readonly RbacRule[];
}

/** Where the handoff's signed audit event is. */
export interface AuditReceipt {
  readonly logPath: string;
  /** Index of the event in the log (0-based). */
  readonly index: number;
  readonly eventId: string;
  /** sha256 of the event's DSSE envelope. */
  readonly eventDigest: string;
  /** The signed checkpoint written after the append. */
  readonly checkpoint: string;
}

/** What a handoff left: the component's outputs. Secret-free by construction. */
export interface HandoffReceipt {
  /** `handed-off`, or `already-handed-off` when the cluster already pulled the declared revision. */
  readonly outcome: string;
  readonly runId: string;
  /** The Git commit the controller took over at. */
  readonly revision: string | null;
  readonly credential: CredentialReceipt | null;
  readonly proof: {
    readonly probeStatus: number;
    readonly tokenReviewAuthenticated: boolean;
    readonly provedAt: string;
    readonly proofWaitSeconds: number;
  } | null;
  readonly confinement: ConfinementSummary | null;
  readonly audit: AuditReceipt | null;
  /** The receipt ConfigMap in the cluster, as namespace/name. */
  readonly receiptName: string;
  /** Seconds from the end of the push until the controller had taken over. */
  readonly readinessSeconds: number | null;
  /** liveSeconds − readinessSeconds − proofWaitSeconds: what the orchestration itself cost. */
  readonly overheadSeconds: number | null;
  /** What the controller took over (objects as kind/namespace/name). */
  readonly takeover: HandoffSummary['takeover'] | null;
  /** Milliseconds per step of the run. */
  readonly stepDurationsMs: HandoffSummary['stepDurationsMs'];
  /** Seconds the whole handoff took. */
  readonly totalSeconds: number;
}

/** The receipt of a run's summary (undefined fields become null: Pulumi drops undefined outputs). */
export function receiptOf(summary: HandoffSummary, receiptName: string): HandoffReceipt {
  const c = summary.credential;
  return {
    outcome: summary.outcome,
    runId: summary.runId,
    revision: summary.revision ?? null,
    credential: c
      ? {
          subject: c.subject,
          fingerprint: c.fingerprint,
          jti: c.jti ?? null,
          issuedAt: c.issuedAt,
          expiresAt: c.expiresAt,
          revokedAt: c.revokedAt,
          secretDeletedAt: c.secretDeletedAt,
          liveSeconds: c.liveSeconds,
          writeWindowSeconds: c.writeWindowSeconds ?? null,
          privilegeWindowSeconds: c.privilegeWindowSeconds ?? null,
          rules: c.rules,
        }
      : null,
    proof: summary.proof ?? null,
    confinement: summary.confinement ?? null,
    audit: summary.audit
      ? {
          logPath: summary.audit.logPath,
          index: summary.audit.index,
          eventId: summary.audit.eventId,
          eventDigest: summary.audit.eventDigest,
          checkpoint: summary.audit.checkpoint,
        }
      : null,
    receiptName,
    readinessSeconds: summary.readinessSeconds ?? null,
    overheadSeconds: summary.overheadSeconds ?? null,
    takeover: summary.takeover ?? null,
    stepDurationsMs: summary.stepDurationsMs,
    totalSeconds: summary.totalSeconds,
  };
}

/**
 * The stored receipt as the cluster's receipt ConfigMap now tells it (for `pulumi refresh`): the run, outcome,
 * revision and audit position come from the cluster; what the ConfigMap does not carry is kept. A cluster handed off
 * again by someone else shows as a change; the same handoff shows no drift.
 */
export function refreshReceipt(stored: HandoffReceipt, inCluster: Receipt | undefined): HandoffReceipt {
  if (!inCluster) return { ...stored, outcome: 'receipt-missing' };
  if (inCluster.runId === stored.runId && inCluster.outcome === stored.outcome) return stored;
  return {
    ...stored,
    runId: inCluster.runId,
    outcome: inCluster.outcome,
    revision: inCluster.revision,
    audit: stored.audit
      ? {
          ...stored.audit,
          index: Number(inCluster.auditLogIndex),
          eventId: inCluster.auditEventId,
          checkpoint: inCluster.auditCheckpoint,
        }
      : null,
  };
}

/**
 * Baton's one-paragraph error for a failed handoff: what failed, where, and what happened to the credential and the
 * record. Secret-free (the summary is).
 */
export function failureMessage(s: HandoffSummary): string {
  const parts = [
    `baton handoff ${s.runId} of cluster ${s.cluster.name} ended ${s.outcome}${s.failedStep ? ` at step ${s.failedStep}` : ''}: ${s.error ?? 'no error was given'}.`,
  ];
  if (s.credential) {
    parts.push(
      s.credential.revokedAt
        ? `The bootstrap credential ${s.credential.fingerprint} was revoked at ${s.credential.revokedAt} (live ${s.credential.liveSeconds} s).`
        : `The bootstrap credential ${s.credential.fingerprint} was NOT proven revoked; it expires at ${s.credential.expiresAt}: run \`baton revoke\` against the cluster.`,
    );
  } else parts.push('No bootstrap credential was minted.');
  parts.push(
    s.audit
      ? `The run is recorded as audit event ${s.audit.eventId} at index ${s.audit.index} of ${s.audit.logPath}.`
      : 'No audit event was recorded.',
  );
  parts.push(
    'Nothing is kept in the Pulumi state: fix the cause (the controller must take over from Git) and run `pulumi up` again.',
  );
  return parts.join(' ');
}
