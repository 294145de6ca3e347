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
import { defaultNodeKind, startBatonControllerSide, startBedCluster } from '@baton/testenv';
import { BATON_CONTROLLER_PROFILE } from './baton-controller-env.js';
import { createHandoffEnv, startControllerFor } from './handoff-env.js';

/** Which controller takes over. */
export type LocalController = 'baton-controller' | 'test-helper';

/** A fresh local cluster, a Git server holding the controller, the controller side, and a plan: ready to hand off. */
export interface LocalHandoff {
  readonly clusterName: string;
  readonly kubeconfigPath: string;
  readonly apiserverAuditLogPath: string | null;
  readonly controller: LocalController;
  readonly env: {
    readonly loaded: LoadedPlan;
    readonly auditLogPath: string;
    readonly keysPath: string;
    readonly revision: string;
  };
  /** Runs `baton up`'s engine in-process with the real collaborators. */
  run(log?: Logger, signal?: AbortSignal): Promise<HandoffSummary>;
  /** Stops the controller side and the Git server; stops the cluster and deletes the files unless `keepCluster`. */
  stop(options?: { keepCluster?: boolean }): Promise<void>;
}

/** Options of {@link startLocalHandoff}. */
export interface StartLocalHandoffOptions {
  /** Run the cluster in a background host that outlives this process. @default false */
  readonly detached?: boolean;
  readonly name?: string;
  readonly nodes?: number;
  /**
   * `baton-controller`: testenv's handoff bed (bootstrap-manifests/baton-controller, its image run by a real node).
   * `test-helper`: the small profile in test/fixtures/handoff, reconciled by test/support/gitops-controller.ts.
   * @default 'baton-controller'
   */
  readonly controller?: LocalController;
}

/** Starts a real local cluster (testenv's bed cluster), a Git server, the controller side and a plan. */
export async function startLocalHandoff(o: StartLocalHandoffOptions = {}): Promise<LocalHandoff> {
  const controller = o.controller ?? 'baton-controller';
  // baton-controller's Pod runs on a real node; the test helper is a process of this one and needs no node.
  const cluster = await startBedCluster({
    ...(o.name ? { name: o.name } : {}),
    ...(o.nodes ? { nodes: o.nodes } : {}),
    ...(o.detached ? { detached: true } : {}),
    node: controller === 'baton-controller' ? defaultNodeKind({}) : 'kwok',
  });
  const { kubeconfigPath } = cluster;
  let env: LocalHandoff['env'];
  let stopSide: (keepFiles: boolean) => Promise<void>;
  try {
    if (controller === 'baton-controller') {
      const side = await startBatonControllerSide({
        kubeconfigPath,
        clusterName: cluster.name,
        profileDir: BATON_CONTROLLER_PROFILE,
        writeAuditKeys: (paths) => writeSigningKeyPair(paths),
        realNode: cluster.realNode,
      });
      env = { ...side, loaded: loadHandoffPlan(side.planPath) };
      stopSide = (keepFiles) => side.stop({ keepFiles });
    } else {
      const e = await createHandoffEnv({ kubeconfigPath, plan: { cluster: { name: cluster.name } } });
      const ctl = startControllerFor(e, kubeconfigPath);
      env = e;
      stopSide = async (keepFiles) => {
        await ctl.stop();
        if (keepFiles) await e.git.stop();
        else await e.stop();
      };
    }
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return {
    clusterName: cluster.name,
    kubeconfigPath,
    apiserverAuditLogPath: cluster.auditLogPath,
    controller,
    env,
    run: (log = createLogger({ level: 'silent' }), signal) =>
      runHandoff(
        env.loaded,
        createHandoffDeps(env.loaded, clientsFromKubeconfigFile(kubeconfigPath), {
          overrides: {
            log,
            isPidAlive: () => true,
            resolveRevision: async () => env.revision,
            ...(signal ? { signal } : {}),
          },
        }),
      ),
    async stop(options = {}) {
      await stopSide(options.keepCluster === true);
      if (!options.keepCluster) await cluster.stop();
    },
  };
}
