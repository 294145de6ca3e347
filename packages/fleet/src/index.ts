// The public API of @baton/fleet. Everything else is internal.
export type { FleetTarget, KubeconfigSource } from './cluster-plans.js';
export { deepMerge, renderTargets } from './cluster-plans.js';
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
  AttemptResult,
  ClusterResult,
  ClusterStatus,
  FleetProgressEvent,
  FleetResult,
  RunFleetOptions,
} from './orchestrator.js';
export { FleetOutcome, fleetExitCode, runFleet } from './orchestrator.js';
export type { Shard, Wave } from './waves.js';
export { assignWaves, budgetCount, parseShard, shardWaves } from './waves.js';
