import { hostname, userInfo } from 'node:os';
import {
  createLogger,
  type HandoffSummary,
  type LoadedPlan,
  type Logger,
  openAuditSink,
  runHandoff,
  systemClock,
} from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';
import { startCluster, startDetachedCluster, stopClusterByName } from '@baton/testenv';
import { createBatonControllerEnv } from './baton-controller-env.js';
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
  /** Run the cluster in a background host that outlives this process (for `demo --keep`). @default false */
  readonly detached?: boolean;
  readonly name?: string;
  readonly nodes?: number;
  /**
   * `baton-controller`: bootstrap-manifests/baton-controller, run by testenv's pod runner. `test-helper`: the small
   * profile in test/fixtures/handoff, reconciled by test/support/gitops-controller.ts. @default 'baton-controller'
   */
  readonly controller?: LocalController;
}

/** Starts a real local cluster, a Git server, the controller side and a plan. */
export async function startLocalHandoff(o: StartLocalHandoffOptions = {}): Promise<LocalHandoff> {
  let stopCluster: () => Promise<void>;
  let kubeconfigPath: string;
  let auditLogPath: string | null;
  let clusterName: string;
  if (o.detached) {
    const c = await startDetachedCluster({ ...(o.name ? { name: o.name } : {}), nodes: o.nodes ?? 1, keep: true });
    ({ kubeconfigPath, auditLogPath } = c);
    clusterName = c.name;
    stopCluster = async () => {
      await stopClusterByName(c.name);
    };
  } else {
    const c = await startCluster({ ...(o.name ? { name: o.name } : {}), nodes: o.nodes ?? 1 });
    ({ kubeconfigPath, auditLogPath } = c);
    clusterName = c.name;
    stopCluster = () => c.stop();
  }
  const controller = o.controller ?? 'baton-controller';
  let env: LocalHandoff['env'];
  let stopSide: (keepFiles: boolean) => Promise<void>;
  try {
    if (controller === 'baton-controller') {
      const e = await createBatonControllerEnv({ kubeconfigPath, clusterName });
      env = e;
      stopSide = (keepFiles) => e.stop({ keepFiles });
    } else {
      const e = await createHandoffEnv({ kubeconfigPath, plan: { cluster: { name: clusterName } } });
      const ctl = startControllerFor(e, kubeconfigPath);
      env = e;
      stopSide = async (keepFiles) => {
        await ctl.stop();
        if (keepFiles) await e.git.stop();
        else await e.stop();
      };
    }
  } catch (err) {
    await stopCluster();
    throw err;
  }
  let seq = 0;
  return {
    clusterName,
    kubeconfigPath,
    apiserverAuditLogPath: auditLogPath,
    controller,
    env,
    run: (log = createLogger({ level: 'silent' }), signal) =>
      runHandoff(env.loaded, {
        operator: clientsFromKubeconfigFile(kubeconfigPath),
        clock: systemClock,
        log,
        audit: openAuditSink(env.loaded.plan.audit),
        actor: { user: userInfo().username, host: hostname(), pid: process.pid, via: 'cli' },
        newRunId: () => `${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}-${process.pid}-${seq++}`,
        isPidAlive: () => true,
        resolveRevision: async () => env.revision,
        ...(signal ? { signal } : {}),
      }),
    async stop(options = {}) {
      await stopSide(options.keepCluster === true);
      if (!options.keepCluster) await stopCluster();
    },
  };
}
