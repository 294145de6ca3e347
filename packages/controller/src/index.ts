// The curated public API of @baton/controller.

export type { Clock } from '@baton/core/clock';
export type { ApplierDeps, ApplyResult, ProtectedIdentity } from './applier.js';
export {
  Applier,
  FIELD_MANAGER,
  HASH_ANNOTATION,
  isProtected,
  isSubset,
  PRUNE_ANNOTATION,
  SyncError,
  TAKEOVER_MANAGER,
} from './applier.js';
export type { ControllerOptions, RunningController } from './controller.js';
export { startController } from './controller.js';
export type { FetchedRevision, FetchOptions, GitAuth } from './git-source.js';
export { fetchRevision, GitFailure, GitFetchError } from './git-source.js';
export type { Condition, GitSync, GitSyncSpec, GitSyncStatus } from './gitsync.js';
export {
  GITSYNC_API_VERSION,
  GITSYNC_GROUP,
  GITSYNC_VERSION,
  GitSyncSpecSchema,
  GitSyncStatusSchema,
  gitSyncCrd,
  parseGitSyncSpec,
  toStructuralSchema,
} from './gitsync.js';
export type { LeaderElectorOptions } from './leader-election.js';
export { LeaderElector } from './leader-election.js';
export type { ControllerLoggerOptions } from './logger.js';
export { createControllerLogger, fingerprint } from './logger.js';
export { mapLimit } from './map-limit.js';
export { Metrics } from './metrics.js';
export type { Profile, TakeoverCheck, TakeoverGap } from './profile.js';
export { checkTakeover, loadProfile, ProfileSchema, parseProfile, valueAt } from './profile.js';
export type { RenderedObject } from './render.js';
export { describeObject, isStageOneKind, objectId, parseObjectId, renderDirectory, renderYaml } from './render.js';
export type { SyncOutcome } from './sync-pass.js';
