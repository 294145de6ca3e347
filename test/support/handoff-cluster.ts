import { type Cluster, startCluster } from '@baton/testenv';
import { afterAll, beforeAll } from 'vitest';
import type { TestController } from './gitops-controller.js';
import { createHandoffEnv, type HandoffEnv, startControllerFor } from './handoff-env.js';

/** A real cluster, a handoff env for it and the test controller, started in `beforeAll` and stopped in `afterAll`. */
export interface HandoffCluster {
  readonly cluster: Cluster;
  readonly env: HandoffEnv;
}

/**
 * Registers the hooks of the enclosing suite (file or `describe`) that start and stop a {@link HandoffCluster};
 * read its fields inside tests, once `beforeAll` has run.
 */
export function useHandoffCluster(): HandoffCluster {
  let cluster: Cluster | undefined;
  let env: HandoffEnv | undefined;
  let controller: TestController | undefined;
  beforeAll(async () => {
    cluster = await startCluster({ nodes: 1 });
    env = await createHandoffEnv({ kubeconfigPath: cluster.kubeconfigPath });
    controller = startControllerFor(env, cluster.kubeconfigPath);
  });
  afterAll(async () => {
    await controller?.stop();
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
