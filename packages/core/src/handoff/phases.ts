// What each step of the pushing part hands the next, whole: the driver (../handoff.ts) threads these values, so a
// step's inputs are in its signature, not in fields of the run that may or may not be set yet. Each phase carries the
// one before it. The run (./run.ts) still records how far it got, fact by fact as each becomes true (the identity's
// name before its TokenRequest, the confinement before its install): revoke, prove and record work from whatever
// exists when a step fails half-way, and that state is partial by nature.
import type { BootstrapIdentity, BootstrapIdentityRef, BootstrapRules, KubeClients, RevokeResult } from '@baton/kube';
import type { AuditAppendResult } from '../audit-sink.js';
import type { ManifestSet } from '../manifest-set.js';
import type { HeldLock } from './preflight.js';
import type { ConfinementState, ProofState } from './run.js';
import type { HandoffSummary } from './types.js';

/** The set read and checked before the cluster is touched, and the lock held (begin). */
export interface Begun {
  readonly held: HeldLock;
  readonly set: ManifestSet;
  /** What pushing the whole set needs. */
  readonly rules: BootstrapRules;
}

/** What this run pushes, decided against the cluster (cleanup). */
export interface Scoped {
  /** The whole set: the takeover is checked over all of it. */
  readonly set: ManifestSet;
  /**
   * What the push applies and the confinement allows: the whole set, or the part the controller does not own yet, or
   * (a repair) the tampered objects.
   */
  readonly toPush: ManifestSet;
  /** What pushing {@link toPush} needs: the credential's rules. */
  readonly rules: BootstrapRules;
  /** The commit the controller must reach. */
  readonly revision: string;
}

/** How the cluster inspection ended: the run is over (nothing minted), or it goes on with what to push. */
export type Inspection = { readonly ended: HandoffSummary } | { readonly scoped: Scoped };

/** The identity's confinement, installed before the identity exists (confine). */
export interface Confined extends Scoped {
  readonly confinement: ConfinementState;
  /** The identity to mint: its name is the confinement's subject. */
  readonly ref: BootstrapIdentityRef;
}

/** The identity minted, and clients that authenticate with its token (mint). */
export interface Minted extends Confined {
  readonly identity: BootstrapIdentity;
  /** Push only. */
  readonly bootstrap: KubeClients;
}

/** The push applied; the close of the write window is under way (push). */
export interface Pushed extends Minted {
  /** Monotonic ms at the push's last write: readiness is counted from it. */
  readonly pushEndMs: number;
}

// The ending part: revoke, prove, repair and record run on every path and never throw; each returns what it did, and
// the driver hands the outcomes on (prove needs the revoke's, record the first three) and to the summary.

/** What the revoke did. */
export interface RevokeOutcome {
  /** What it deleted, once it went through (the bound Secret first). */
  readonly revoked?: RevokeResult;
  /** Why the credential is not revoked, when a token may exist and the revoke failed. */
  readonly failure?: string;
}

/** What the proof found. */
export interface ProofOutcome {
  readonly proof?: ProofState;
  /** Why the revocation is not proven, when the proof ran and failed. */
  readonly failure?: string;
}

/** What the record wrote. */
export interface RecordOutcome {
  readonly audit?: AuditAppendResult;
  /** Why the event or the receipt was not written. */
  readonly failure?: string;
}

/** The ending part's outcomes, as far as it got (record's is known only after the record itself). */
export interface Ending {
  readonly revoke: RevokeOutcome;
  readonly proof: ProofOutcome;
  /** Why the repair identity's revocation is not proven, when a repair ran and it is not. */
  readonly repairFailure?: string;
  readonly record?: RecordOutcome;
}

/** The ending of a run whose ending part has not run yet: nothing revoked, proven or recorded (tests of the pushing part). */
export const NOT_ENDED: Ending = { revoke: {}, proof: {} };

/** Why the revocation is not proven (revoke, proof or the repair identity's), when it is not. */
export function revocationFailure(e: Ending): string | undefined {
  return e.revoke.failure ?? e.proof.failure ?? e.repairFailure;
}
