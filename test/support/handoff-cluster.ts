import { type BatonControllerEnv, createBatonControllerEnv } from '@baton/testbed';
import { type Cluster, startCluster } from '@baton/testenv';
import { afterAll, beforeAll } from 'vitest';

/**
 * A real cluster (a real node, except for a compat version whose kubelet the bed does not build) and a handoff to
 * baton-controller on it: its profile in Git, its pinned image in the bed's registry, a plan; started in `beforeAll`,
 * stopped in `afterAll`.
 */
export interface HandoffCluster {
  readonly cluster: Cluster;
  readonly env: BatonControllerEnv;
}

/**
 * Registers the hooks of the enclosing suite (file or `describe`) that start and stop a {@link HandoffCluster};
 * read its fields inside tests, once `beforeAll` has run.
 */
export function useHandoffCluster(): HandoffCluster {
  let cluster: Cluster | undefined;
  let env: BatonControllerEnv | undefined;
  beforeAll(async () => {
    cluster = await startCluster({ node: 'real' });
    env = await createBatonControllerEnv({
      kubeconfigPath: cluster.kubeconfigPath,
      clusterName: cluster.name,
      realNode: cluster.realNode,
    });
  });
  afterAll(async () => {
    await env?.stop();
    await cluster?.stop();
  });
  return {
    get cluster() {
      if (!cluster) throw new Error('the cluster starts in beforeAll');
      return cluster;
    },
    get env() {
      if (!env) throw new Error('the handoff env starts in beforeAll');
      return env;
    },
  };
}
