import { hostname, userInfo } from 'node:os';
import { createLogger, type HandoffSummary, type Logger, openAuditSink, runHandoff, systemClock } from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';
import { startCluster, startDetachedCluster, stopClusterByName } from '@baton/testenv';
import { startTestController, type TestController } from './gitops-controller.js';
import { createHandoffEnv, type HandoffEnv } from './handoff-env.js';

/** A fresh local cluster, a Git server holding the controller, the controller side, and a plan: ready to hand off. */
export interface LocalHandoff {
  readonly clusterName: string;
  readonly kubeconfigPath: string;
  readonly apiserverAuditLogPath: string | null;
  readonly env: HandoffEnv;
  /** Runs `baton up`'s engine in-process with the real collaborators. */
  run(log?: Logger, signal?: AbortSignal): Promise<HandoffSummary>;
  /** Stops the controller side and the Git server; stops the cluster unless `keepCluster`. */
  stop(options?: { keepCluster?: boolean }): Promise<void>;
}

/** Options of {@link startLocalHandoff}. */
export interface StartLocalHandoffOptions {
  /** Run the cluster in a background host that outlives this process (for `demo --keep`). @default false */
  readonly detached?: boolean;
  readonly name?: string;
  readonly nodes?: number;
}

/**
 * Starts a real local cluster and Git server, commits the test controller profile, writes a plan, and starts the
 * controller side (the test helper that reconciles with the controller's own ServiceAccount token).
 */
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
  let env: HandoffEnv | undefined;
  let controller: TestController | undefined;
  try {
    env = await createHandoffEnv({ kubeconfigPath, plan: { cluster: { name: clusterName } } });
    const p = env.loaded.plan;
    controller = startTestController({
      kubeconfigPath,
      repoUrl: env.repoUrl,
      credentials: env.git.credentials,
      path: 'controller',
      namespace: p.controller.namespace,
      serviceAccount: p.controller.serviceAccount,
      deployment: p.controller.name,
      statusName: p.controller.status.name,
    });
  } catch (err) {
    await env?.stop();
    await stopCluster();
    throw err;
  }
  const ready = env;
  const ctl = controller;
  let seq = 0;
  return {
    clusterName,
    kubeconfigPath,
    apiserverAuditLogPath: auditLogPath,
    env: ready,
    run: (log = createLogger({ level: 'silent' }), signal) =>
      runHandoff(ready.loaded, {
        operator: clientsFromKubeconfigFile(kubeconfigPath),
        clock: systemClock,
        log,
        audit: openAuditSink(ready.loaded.plan.audit),
        actor: { user: userInfo().username, host: hostname(), pid: process.pid, via: 'cli' },
        newRunId: () => `${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}-${process.pid}-${seq++}`,
        isPidAlive: () => true,
        resolveRevision: async () => ready.revision,
        ...(signal ? { signal } : {}),
      }),
    async stop(options = {}) {
      await ctl.stop();
      if (options.keepCluster) await ready.git.stop();
      else {
        await ready.stop();
        await stopCluster();
      }
    },
  };
}
