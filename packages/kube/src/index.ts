// The public API of @baton/kube. Everything else is internal.
export type { AccessRequest } from './access-review.js';
export { isAllowed, planReads } from './access-review.js';
export type {
  BootstrapIdentity,
  BootstrapIdentityRef,
  MintOptions,
  RevokeResult,
} from './bootstrap-identity.js';
export {
  BOOTSTRAP_COMPONENT,
  BOOTSTRAP_COMPONENT_LABEL,
  bootstrapName,
  bootstrapRefFor,
  decodeJwtClaims,
  MIN_TOKEN_SECONDS,
  MINT_FIELD_MANAGER,
  mintBootstrapIdentity,
  RUN_ID_LABEL,
  revokeBootstrapIdentity,
  unbindBootstrapIdentity,
} from './bootstrap-identity.js';
export type { BootstrapScan } from './bootstrap-leftovers.js';
export { findBootstrapLeftovers, removeBootstrapLeftover, scanBootstrapObjects } from './bootstrap-leftovers.js';
export type { ConfinementProbe } from './confinement.js';
export {
  closeConfinement,
  installConfinement,
  probeClosed,
  probeConfinement,
  removeConfinement,
} from './confinement.js';
export type { ConfinedObject, Confinement, ConfinementSpec } from './confinement-policy.js';
export {
  CONFINEMENT_FIELD_MANAGER,
  closedPolicy,
  PLAN_DIGEST_ANNOTATION,
  planConfinement,
  TOKEN_EXPIRES_ANNOTATION,
} from './confinement-policy.js';
export type { ExpectedObjectsOptions } from './expected-objects.js';
export { expectedObjects, withSchemaDefaults, writableView } from './expected-objects.js';
export type { KubeClients, KubeClientsOptions } from './kube-clients.js';
export {
  clientsFromKubeConfig,
  clientsFromKubeconfigContent,
  clientsFromKubeconfigFile,
  clientsFromKubeconfigFiles,
  clientsFromToken,
  clientsImpersonating,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from './kube-clients.js';
export { kubeCall, statusOf, toKubeApiError } from './kube-error.js';
export type { KindInfo, KubeObject } from './kube-object.js';
export { describeObject, INSTALL_KINDS, kindsFromCrds } from './kube-object.js';
export type { AcquireLockOptions, HandoffLock, LockHolder } from './lease-lock.js';
export { acquireHandoffLock, LockHeldError, releaseHandoffLock, renewHandoffLock } from './lease-lock.js';
export type { ObjectWatchOptions, WatchedRef } from './object-watch.js';
export { ObjectWatch } from './object-watch.js';
export type { CheckPushedObjectsOptions, PushedObjectMismatch, PushedObjectsCheck } from './post-close-check.js';
export { checkPushedObjects, diffFromPlan } from './post-close-check.js';
export type { BootstrapRules, RbacRule } from './rbac-rules.js';
export { computeBootstrapRules, flattenRules, hasWildcard, ruleAtoms, toPolicyRule } from './rbac-rules.js';
export type { DeploymentState, FieldOwnership, WorkloadJson } from './readiness.js';
export {
  deploymentState,
  deploymentStatus,
  fieldOwnership,
  readPath,
  statefulSetState,
  statefulSetStatus,
  waitingContainers,
} from './readiness.js';
export type { RulesDiff } from './rules-review.js';
export { diffEffectiveRules } from './rules-review.js';
export type { ServerSideApplyOptions } from './server-side-apply.js';
export { readObject, serverSideApply } from './server-side-apply.js';
export type { TokenReviewResult } from './token-review.js';
export { probeToken, reviewToken } from './token-review.js';
export type { RestartState, WorkloadRef } from './workload-pods.js';
export {
  deleteWorkload,
  deleteWorkloadPods,
  describeWorkload,
  restartState,
  selectedPods,
  WORKLOAD_KINDS,
  workloadSelector,
  workloadsOf,
} from './workload-pods.js';
