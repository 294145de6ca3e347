// What the tests, the benchmarks and the demo stand up on @baton/testenv's clusters. testenv keeps the cluster
// (control plane, node, binaries, processes); this package holds what runs on it for baton's own tests and
// benchmarks, so neither bench/ nor scripts/ reaches into test/.
export { BATON_CONTROLLER_PROFILE, type BatonControllerEnv, createBatonControllerEnv } from './baton-controller-env.js';
export {
  CLUSTER_PATH,
  CONTROLLER_MANIFESTS,
  type ControllerEnv,
  callWebhook,
  configMapYaml,
  controllerManifests,
  gitSyncStatus,
  mintToken,
  NS,
  pushAsBootstrap,
  putSecret,
  startControllerEnv,
  tokenClient,
  WEBHOOK_SECRET,
  writeTokenKubeconfig,
} from './controller-env.js';
export {
  deleteNamespacesAndWait,
  type FleetFileOptions,
  type RealFleetTarget,
  setSchedulable,
  startRealFleetTargets,
  stopRealFleetTargets,
  targetOverrides,
  writeFleetFile,
  writeFleetTemplate,
} from './fleet-targets.js';
export {
  type InstallOutsideOptions,
  installOutside,
  installUserPulumiProject,
  type OutsideInstall,
  type PackedTarballs,
  packPackages,
  runtimeClosure,
  USER_PULUMI_PROJECT,
  USER_PULUMI_PROJECT_FILES,
  userEnv,
} from './outside-install.js';
