// The public API of @baton/fleet. Everything else is internal.
export type { FleetTarget, KubeconfigSource } from './cluster-plans.js';
export { deepMerge, renderTargets } from './cluster-plans.js';
export type { FleetAudit, FleetAuditOptions } from './fleet-audit.js';
export { openFleetAudit } from './fleet-audit.js';
export type { FleetCluster, FleetFile, LoadedFleet, PlanTemplate } from './fleet-file.js';
export {
  FleetFileSchema,
  fleetJsonSchema,
  loadFleetFile,
  PlanTemplateSchema,
  parseFleetText,
} from './fleet-file.js';
export type {
  AttemptOutcome,
  ClusterResult,
  ClusterStatus,
  FleetProgressEvent,
  FleetResult,
} from './fleet-result.js';
export { FleetOutcome, fleetExitCode } from './fleet-result.js';
export type { RecordedFleetOptions, RecordedFleetResult, RecordedSummary } from './fleet-run.js';
export { newFleetRunId, runRecordedFleet } from './fleet-run.js';
export { defaultShardImage } from './job-engine/default-image.js';
export type { JobFleetOptions, ShardTarget } from './job-engine/run-jobs.js';
export { runJobFleet } from './job-engine/run-jobs.js';
export type { ShardOptions } from './job-engine/shard.js';
export { runShard } from './job-engine/shard.js';
export type { TargetJournalData } from './job-engine/target-journal.js';
export { journalName, mergeJournal, TargetJournal } from './job-engine/target-journal.js';
export type { WaveJobOptions } from './job-engine/wave-job.js';
export { buildWaveJob, FLEET_RUN_LABEL, parseIndexes, SHARD_CONFIG_ERROR_EXIT } from './job-engine/wave-job.js';
export type { LocalEngineOptions } from './local-engine.js';
export { attemptOf, localHandoff, operatorKubeconfigPath, targetClients } from './local-engine.js';
export type { AttemptResult, RunFleetOptions } from './orchestrator.js';
export { runFleet } from './orchestrator.js';
export type { Shard, Wave } from './waves.js';
export { assignWaves, budgetCount, parseShard, shardWaves } from './waves.js';
