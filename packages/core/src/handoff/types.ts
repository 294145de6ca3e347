import type { HandoffOutcome } from '@baton/audit';
import type { ErrorCode } from '@baton/errors';
import type { KubeClients, LockHolder, RbacRule } from '@baton/kube';
import type { Logger } from 'pino';
import type { AuditAppendResult, AuditSink } from '../audit-sink.js';
import type { Clock } from '../clock.js';
import type { CheckImagesOptions } from '../images/check-images.js';
import type { JournalStore } from '../journal.js';

/** Who runs the handoff. */
export interface HandoffActor {
  /** OS or CI user (the Kubernetes identity is read in preflight). */
  readonly user: string;
  readonly host: string;
  readonly pid: number;
  readonly via: 'cli' | 'pulumi' | 'fleet';
  /** The fleet run this handoff belongs to, when a fleet pipeline runs it. */
  readonly fleetRunId?: string;
}

/** Collaborators of {@link runHandoff}; entry points wire the real ones, tests swap them. */
export interface HandoffDeps {
  /** Clients with the operator's credential: used for preflight, mint, readiness reads, revoke and record only. */
  readonly operator: KubeClients;
  readonly clock: Clock;
  readonly log: Logger;
  readonly audit: AuditSink;
  readonly actor: HandoffActor;
  /** A new unique run id (lowercase, DNS-safe). */
  readonly newRunId: () => string;
  /** Whether a process of this host is alive (to take over a lock whose holder was killed). */
  readonly isPidAlive: (pid: number) => boolean;
  /** Whether a lock holder on another host is known to be gone (a fleet shard's terminated pod); see @baton/kube. */
  readonly isLockHolderGone?: (holder: LockHolder) => Promise<boolean>;
  /** Resolves a Git ref to a commit when the plan does not pin one. */
  readonly resolveRevision: (source: { url: string; ref: string }) => Promise<string>;
  /** How the push set's images are verified before anything is minted. @default with the plan's trust policy */
  readonly images?: CheckImagesOptions;
  /** SIGINT/SIGTERM from the entry point: aborts the run, which still revokes, proves and records. */
  readonly signal?: AbortSignal;
  /** Called as each step starts (tests use it to interrupt a run at a precise point). */
  readonly onStep?: (step: HandoffStep) => void | Promise<void>;
  /** Poll interval for readiness and proof, in ms. @default 250 */
  readonly pollIntervalMs?: number;
  /** How long the revoked token may keep authenticating (the API server's token cache is 10 s). @default 30000 */
  readonly proofTimeoutMs?: number;
  /** How often the cluster's handoff Lease is renewed, in ms. @default a third of the Lease's duration */
  readonly lockRenewIntervalMs?: number;
  /** How long a failing revoke is retried (with backoff), in ms. @default 120000 (bounded by the token's expiry) */
  readonly revokeRetryMs?: number;
  /** How long the confinement may take to deny the probe write after its install, in ms. @default 10000 */
  readonly confinementTimeoutMs?: number;
  /** How long one API request of the revoke may hang before it is retried, in ms. @default 10000 */
  readonly requestTimeoutMs?: number;
  /**
   * Where the step journal lives. @default the plan's `journalDir` on this machine. The fleet's Job engine keeps it
   * on the management cluster, so a replacement pod resumes where a killed one stopped.
   */
  readonly journal?: JournalStore;
  /** Called as each step ends, with its duration and its key fact (rules computed, objects pushed, first 401 …). */
  readonly onStepDone?: (step: HandoffStep, durationMs: number, fact: string | undefined) => void;
}

/** The steps of a handoff, in order. */
export const HandoffStep = {
  validate: 'validate',
  preflight: 'preflight',
  cleanup: 'cleanup',
  confine: 'confine',
  mint: 'mint',
  scopeCheck: 'scope-check',
  push: 'push',
  takeover: 'takeover',
  revoke: 'revoke',
  prove: 'prove',
  /** Only after the post-close check found a rewrite: push the planned values again, restart, or stop. */
  repair: 'repair',
  record: 'record',
} as const;
/** A handoff step name. */
export type HandoffStep = (typeof HandoffStep)[keyof typeof HandoffStep];

/** The outcome of a run: the audit outcomes, plus `already-handed-off` when nothing was pushed. */
export type HandoffResultOutcome = HandoffOutcome | 'already-handed-off';

/** The secret-free summary a run returns (and `baton up -o json` prints). */
export interface HandoffSummary {
  readonly runId: string;
  readonly outcome: HandoffResultOutcome;
  readonly failedStep?: string;
  readonly error?: string;
  /** The error's stable code (`tampered`, `timeout`, `confinement`, `kube-api`, `revocation` …), with `error`. */
  readonly errorCode?: ErrorCode;
  readonly cluster: { readonly name: string; readonly server: string };
  readonly operator?: string;
  readonly revision?: string;
  readonly credential?: {
    /** The bootstrap ServiceAccount's username. */
    readonly subject: string;
    readonly fingerprint: string;
    readonly jti: string | undefined;
    readonly issuedAt: string;
    readonly expiresAt: string;
    /** When the API server first refused the token (the credential's real end). */
    readonly revokedAt: string | null;
    /** When the throwaway Secret's deletion was acknowledged. */
    readonly secretDeletedAt: string | null;
    readonly liveSeconds: number;
    /**
     * Seconds from issue until admission denied every write by the credential (the push was over): the window in
     * which it could write, next to `liveSeconds`, the window in which it authenticated.
     */
    readonly writeWindowSeconds?: number;
    /**
     * Seconds from issue until the credential, asking as itself, was denied `get` on the planned Secrets once its
     * bindings were deleted after the push: the window in which it could read or write anything of the plan.
     */
    readonly privilegeWindowSeconds?: number;
    readonly rules: readonly RbacRule[];
  };
  /** The admission-level confinement of the bootstrap identity to the plan. */
  readonly confinement?: ConfinementSummary;
  /** Objects that carry baton's bootstrap labels but that baton did not create: reported, never deleted. */
  readonly suspicious?: readonly string[];
  readonly proof?: {
    readonly probeStatus: number;
    readonly tokenReviewAuthenticated: boolean;
    readonly provedAt: string;
    /** Seconds from the Secret's deletion to the first 401. */
    readonly proofWaitSeconds: number;
  };
  /** Seconds from the end of the push until the controller had taken over. */
  readonly readinessSeconds?: number;
  /** liveSeconds − readinessSeconds − proofWaitSeconds: what the orchestration itself cost. */
  readonly overheadSeconds?: number;
  readonly totalSeconds: number;
  readonly takeover?: {
    readonly revisionSeen: string | undefined;
    readonly ownedObjects: readonly string[];
    readonly notTakenOver: readonly string[];
    /** Plan-declared push-only objects (never in Git), not expected to be taken over. */
    readonly pushOnly: readonly string[];
  };
  readonly leftoversRemoved: readonly string[];
  readonly stepDurationsMs: Readonly<Record<string, number>>;
  readonly audit?: AuditAppendResult;
  /**
   * Present when this run found the cluster already taken over for the declared revision (an earlier run was killed
   * after the takeover but before its receipt): it minted and pushed nothing, finished that run's record and wrote
   * the receipt. `outcome` is then `handed-off` and `credential` is the killed run's (from the journal), if known.
   */
  readonly resumed?: ResumedRun;
  /** Present when the outcome is `tampered`: what the post-close check found and what the repair did. */
  readonly tampering?: TamperingSummary;
}

/** Objects rewritten during the push window, and the repair (see {@link HandoffSummary.tampering}). */
export interface TamperingSummary {
  readonly detectedBy: 'post-close-check';
  readonly detectedAt: string;
  /** Each object and its differing fields, never a value. */
  readonly objects: readonly { readonly object: string; readonly fields: readonly string[] }[];
  readonly repair?: RepairSummary;
}

/**
 * What the repair did: `repaired` when a second confined, short-lived identity pushed the planned values again, the
 * post-close check verified them and every pushed workload's pods were replaced; `stopped` when that could not be
 * verified and the pushed workloads and the tampered Secrets were deleted instead.
 */
export interface RepairSummary {
  readonly outcome: 'repaired' | 'stopped';
  /** The repair identity is `baton-bootstrap-<runId>`. */
  readonly runId: string;
  readonly credential?: {
    readonly subject: string;
    readonly fingerprint: string;
    readonly issuedAt: string;
    readonly revokedAt: string | null;
    readonly writeWindowSeconds?: number;
    readonly tokenReviewAuthenticated?: boolean;
  };
  readonly policyName?: string;
  /** Objects pushed again with their planned values (Kind/namespace/name). */
  readonly repushed: readonly string[];
  /** When the post-close check found them as planned. */
  readonly verifiedAt?: string;
  /** Workloads whose pods were all replaced after the repair. */
  readonly restarted: readonly string[];
  /** What was deleted because the repair was not verified. */
  readonly stopped: readonly string[];
  /** Seconds from the detection to the end of the repair (restarts included). */
  readonly repairSeconds: number;
  /** Why the repair was not verified, or what of it did not complete. */
  readonly error?: string;
  /** One sentence for the run's error: what was repaired or stopped. */
  readonly note: string;
}

/** What the summary says of the confinement (see {@link HandoffSummary.confinement}). */
export interface ConfinementSummary {
  /** The ValidatingAdmissionPolicy and binding, named like the bootstrap identity. */
  readonly policyName: string;
  /** The manifest set it allowed, and nothing else. */
  readonly planDigest: string;
  readonly subject: string;
  /** The writes allowed, as Kind/namespace/name. */
  readonly allowed: readonly string[];
  readonly validationCount: number;
  readonly policyBytes: number;
  /**
   * Objects too large to pin whole, pinned inline by their security-relevant fields only (Kind/namespace/name): the
   * post-close check compares the rest.
   */
  readonly partlyPinned: readonly string[];
  /** A write outside the plan, made with the credential before the push, was denied by the policy. */
  readonly probeDenied: boolean;
  readonly installedAt: string | null;
  /** When the policy was switched to deny every write (the end of the write window). */
  readonly closedAt: string | null;
  /** When the policy was deleted (after the revocation was proven). */
  readonly removedAt: string | null;
  /** Why the policy was left in place, when it was (it then denies every write until the token expires). */
  readonly kept?: string;
  /** Seconds waited before the token was requested until the policy was seen active (outside the live window). */
  readonly activeWaitSeconds?: number;
  /** Seconds of the credential's live window spent on the probe outside the plan (before the push). */
  readonly probeSeconds?: number;
  /** Seconds from the end of the push until the closed policy denied a planned write (the window's end). */
  readonly closeSeconds?: number;
  /**
   * When the post-close check (operator's credential, after the close) found every pushed object as planned, Secret
   * values by digest; absent when it did not run or found a difference (the run then failed naming the object).
   */
  readonly verifiedAt?: string;
  /** How many pushed objects the post-close check read and compared. */
  readonly verifiedObjects?: number;
}

/** What a run that completed a killed run's handoff found and recorded (see {@link HandoffSummary.resumed}). */
export interface ResumedRun {
  /** The killed run whose credential pushed, or undefined when neither the journal nor a leftover names it. */
  readonly runId: string | undefined;
  /** Its last journaled step, when this machine's journal has it. */
  readonly lastStep: string | undefined;
  /** Whether this machine's journal had the killed run's credential (fingerprint, JTI, times). */
  readonly hasJournal: boolean;
  /**
   * The outcome of its audit event. Written by this run, it is `aborted`: a `handed-off` event must carry a revocation
   * proof (401 and TokenReview with the token), impossible without the token, which is never stored. When the killed
   * run had appended its own event before its receipt, that event stands and nothing is appended.
   */
  readonly recordedOutcome: HandoffOutcome;
  /** Whether the killed run's own event proves the token refused (only when it was killed after recording). */
  readonly revocationProven: boolean;
  /** What was done and what is not known, in one sentence. */
  readonly note: string;
}
