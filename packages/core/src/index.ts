// The public API of @baton/core. Everything else is internal.
export type { AuditAppendResult, AuditSink, OpenAuditSinkOptions } from './audit-sink.js';
export { appendEvent, openAuditSink, withSigner } from './audit-sink.js';
export type { ClusterPlanCheck, DryRunResult } from './check-plan.js';
export { checkPlanOnCluster } from './check-plan.js';
export type { Clock, PollOptions } from './clock.js';
export { pollUntil, retryUntil, systemClock, withDeadline } from './clock.js';
export type { GitAuth } from './git-revision.js';
export { resolveGitRevision } from './git-revision.js';
export type { CreateHandoffDepsOptions } from './handoff/deps.js';
export { createHandoffDeps, newRunId } from './handoff/deps.js';
export { fullFingerprint } from './handoff/fingerprint.js';
export type {
  ConfinementSummary,
  HandoffActor,
  HandoffDeps,
  HandoffResultOutcome,
  HandoffSummary,
  RepairSummary,
  ResumedRun,
  TamperingSummary,
} from './handoff/types.js';
export { HandoffStep } from './handoff/types.js';
export { runHandoff } from './handoff.js';
export type { HandoffPlan, LoadedPlan } from './handoff-plan.js';
export { handoffPlanJsonSchema, loadHandoffPlan, parseHandoffPlan, planAsInput } from './handoff-plan.js';
export type { CheckImagesOptions, ImageCheck } from './images/check-images.js';
export { checkImages } from './images/check-images.js';
export type { ImageRef } from './images/image-ref.js';
export { parseImageRef } from './images/image-ref.js';
export type { PlanImageRule, ProfileImageRule } from './images/image-rules.js';
export { matchesImage } from './images/image-rules.js';
export { podImages } from './images/pod-images.js';
export type { ProvenanceFacts, ProvenancePolicy } from './images/provenance-policy.js';
export { checkProvenance } from './images/provenance-policy.js';
export type { RegistryAccess, RegistryDescriptor } from './images/registry-client.js';
export { RegistryClient, RegistryError } from './images/registry-client.js';
export type {
  CredentialHelperRunner,
  DockerConfigOptions,
  FoundLogin,
  RegistryCredentials,
  RegistryLogin,
} from './images/registry-credentials.js';
export { dockerConfigCredentials } from './images/registry-credentials.js';
export type {
  ImageSigners,
  ImagesVerdict,
  ImageTrustPolicy,
  ImageTrustRule,
  UnsignedImage,
  VerifiedImage,
} from './images/verify-images.js';
export { verifyImages } from './images/verify-images.js';
export type { JournalEntry, UnfinishedRun } from './journal.js';
export { Journal } from './journal.js';
export type { CreateLoggerOptions, Logger } from './logger.js';
export { createLogger, fingerprint, REDACT_PATHS, silentLogger } from './logger.js';
export { planSecrets, secretsReadByWorkloads } from './manifest-secrets.js';
export type { ManifestObject, ManifestSet } from './manifest-set.js';
export { APPLY_ORDER, loadManifestSet, readManifestDir, validateManifestSet } from './manifest-set.js';
export type { HandoffPlanInput } from './plan-schema.js';
export { DEFAULT_HANDOFF_LOG_ORIGIN, HandoffPlanSchema } from './plan-schema.js';
export type { HandoffPreview } from './preview.js';
export { previewHandoff } from './preview.js';
export type { Receipt } from './receipt.js';
export { RECEIPT_NAME, readReceipt, writeReceipt } from './receipt.js';
export type { TakeoverState } from './takeover.js';
export { checkTakeover, fieldPaths, isOwnedBy } from './takeover.js';
