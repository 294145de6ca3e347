// What bench:handoff runs each time: a fresh bed cluster with a real node, baton-controller's side (its profile in
// the bed's Git server, its pinned image in the bed's registry), a plan, and `baton up`'s engine in-process.
import { fileURLToPath } from 'node:url';
import { writeSigningKeyPair } from '@baton/audit';
import {
  createHandoffDeps,
  createLogger,
  type HandoffSummary,
  type LoadedPlan,
  type Logger,
  loadHandoffPlan,
  runHandoff,
} from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';
import { startBatonControllerSide, startBedCluster } from '@baton/testenv/beds';

const PROFILE = fileURLToPath(new URL('../bootstrap-manifests/baton-controller', import.meta.url));

/** A fresh local cluster handing off to baton-controller. */
export interface LocalHandoff {
  readonly kubeconfigPath: string;
  readonly loaded: LoadedPlan;
  /** Runs `baton up`'s engine in-process with the real collaborators. */
  run(log?: Logger): Promise<HandoffSummary>;
  /** Stops the controller side, the Git server and the cluster, and deletes the files. */
  stop(): Promise<void>;
}

/** Starts a real local cluster (a real node unless the version has no kubelet build), the side and a plan. */
export async function startLocalHandoff(name: string): Promise<LocalHandoff> {
  const cluster = await startBedCluster({ name, node: 'real' });
  const { kubeconfigPath } = cluster;
  try {
    const side = await startBatonControllerSide({
      kubeconfigPath,
      clusterName: cluster.name,
      profileDir: PROFILE,
      writeAuditKeys: (paths) => writeSigningKeyPair(paths),
      realNode: cluster.realNode,
    });
    const loaded = loadHandoffPlan(side.planPath);
    return {
      kubeconfigPath,
      loaded,
      run: (log = createLogger({ level: 'silent' })) =>
        runHandoff(
          loaded,
          createHandoffDeps(loaded, clientsFromKubeconfigFile(kubeconfigPath), {
            overrides: { log, isPidAlive: () => true, resolveRevision: async () => side.revision },
          }),
        ),
      async stop() {
        await side.stop();
        await cluster.stop();
      },
    };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}
