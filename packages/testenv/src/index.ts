// @baton/testenv: a real local cluster, built from Go modules and started on this machine: the control plane, a real
// node in the bed's own network namespace, their binaries, and the clusters recorded on disk. What runs on a cluster
// (GitOps beds, images and their registry, the Git server, the Pulumi environment) has a subpath of its own.
export type { ApiserverAuditEvent, IdentityActivity } from './apiserver-audit.js';
export { apiserverRequestsBy, identityActivity } from './apiserver-audit.js';
export type { Cluster, StartClusterOptions } from './cluster.js';
export { startCluster, stopAll } from './cluster.js';
export { type ClusterState, clustersDir } from './cluster-dir.js';
export type { ControlPlaneBinaries, EnsureBinariesOptions } from './control-plane-binaries.js';
export {
  CONTROL_PLANE_VERSIONS,
  ensureControlPlaneBinaries,
  KUBERNETES_VERSION_ENV,
  KUBERNETES_VERSIONS,
  resolveKubernetesVersion,
} from './control-plane-binaries.js';
export type { DetachedBed, DetachedCluster } from './detached.js';
export { startDetachedCluster } from './detached.js';
export type { EnsureGoBuildOptions, GoBuildResult, GoBuildSpec } from './go-build.js';
export { ensureGoBuild, goVersion } from './go-build.js';
// --- A real node: kubelet, containerd, kube-proxy, CoreDNS in the bed's network namespace (issue 26) ---
export type { BedNetwork, LinkableBed } from './node/bed-network.js';
export { createBedNetwork, hostLinkOf, linkBeds, removeBedNetwork } from './node/bed-network.js';
export type { EnsureNodeBinariesOptions, NodeBinaries } from './node/node-binaries.js';
export {
  COREDNS_VERSION,
  ensureNodeBinaries,
  NODE_KUBERNETES_VERSIONS,
  nodeVersionFor,
} from './node/node-binaries.js';
export { cacheRoot, goModulesDir } from './paths.js';
export type { PollOptions } from './poll.js';
export { pollUntil } from './poll.js';
export { freePorts } from './ports.js';
export type { RealNodeCoordinates, RealNodeInfo } from './real-node-info.js';
export { listClusters, stopClusterByName } from './recorded-clusters.js';
