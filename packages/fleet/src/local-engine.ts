import { homedir } from 'node:os';
import { join } from 'node:path';
import { type HandoffDeps, type HandoffSummary, runHandoff } from '@baton/core';
import { ConfigError } from '@baton/errors';
import {
  clientsFromKubeconfigContent,
  clientsFromKubeconfigFile,
  type KubeClients,
  kubeCall,
  statusOf,
} from '@baton/kube';
import type { FleetTarget, KubeconfigSource } from './cluster-plans.js';
import type { AttemptResult } from './orchestrator.js';

/** Where the operator's own kubeconfig is (--kubeconfig, else $KUBECONFIG, else ~/.kube/config). */
export function operatorKubeconfigPath(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  return flag ?? env.KUBECONFIG?.split(':')[0] ?? join(env.HOME ?? homedir(), '.kube', 'config');
}

/**
 * The operator's clients for one target, from its kubeconfig source. A Secret reference is read from the management
 * cluster (Cluster API keeps `<name>-kubeconfig` there); its text is never logged.
 * @throws {ConfigError} naming the cluster when the source cannot be used.
 */
export async function targetClients(
  target: { readonly name: string; readonly kubeconfig: KubeconfigSource },
  o: { readonly operatorKubeconfig: string; readonly management: KubeClients | undefined },
): Promise<KubeClients> {
  const k = target.kubeconfig;
  switch (k.kind) {
    case 'file':
      return clientsFromKubeconfigFile(k.path, k.context);
    case 'context':
      return clientsFromKubeconfigFile(o.operatorKubeconfig, k.context);
    case 'default':
      return clientsFromKubeconfigFile(o.operatorKubeconfig);
    case 'secret': {
      if (!o.management)
        throw new ConfigError(
          `cluster "${target.name}": its kubeconfig is in Secret ${k.namespace}/${k.name} on the management cluster; pass --management-kubeconfig`,
        );
      const secret = await kubeCall(`read Secret ${k.namespace}/${k.name} (kubeconfig of cluster ${target.name})`, () =>
        o.management!.core.readNamespacedSecret({ namespace: k.namespace, name: k.name }),
      ).catch((err: unknown) => {
        if (statusOf((err as { cause?: unknown }).cause ?? err) === 404)
          throw new ConfigError(
            `cluster "${target.name}": Secret ${k.namespace}/${k.name} does not exist on the management cluster; create it or fix secretRef`,
          );
        throw err;
      });
      const b64 = secret.data?.[k.key];
      if (!b64)
        throw new ConfigError(
          `cluster "${target.name}": Secret ${k.namespace}/${k.name} has no key "${k.key}"; fix secretRef.key`,
        );
      return clientsFromKubeconfigContent(Buffer.from(b64, 'base64').toString('utf8'), k.context);
    }
  }
}

/** How a handoff summary counts for the fleet: `already-handed-off` with an error (unhealthy) is a failure. */
export function attemptOf(s: HandoffSummary): AttemptResult<HandoffSummary> {
  const outcome =
    s.outcome === 'already-handed-off'
      ? s.error
        ? 'failed'
        : 'already-handed-off'
      : (s.outcome as AttemptResult['outcome']);
  return {
    outcome,
    ...(s.error ? { error: s.error } : {}),
    ...(s.failedStep ? { failedStep: s.failedStep } : {}),
    summary: s,
  };
}

/** Options of {@link localHandoff}. */
export interface LocalEngineOptions {
  /** Core's collaborators for one target (operator clients, clock, log, the fleet's audit sink, actor, hooks). */
  readonly depsFor: (target: FleetTarget, signal: AbortSignal) => Promise<HandoffDeps>;
}

/**
 * The in-process engine: each cluster runs core's `runHandoff`, which already resumes what a killed run left
 * (a receipt that says handed off is only re-checked; a cluster caught mid-handoff is completed or cleaned up).
 */
export function localHandoff(o: LocalEngineOptions) {
  return async (target: FleetTarget, ctx: { signal: AbortSignal }): Promise<AttemptResult<HandoffSummary>> =>
    attemptOf(await runHandoff(target.loaded, await o.depsFor(target, ctx.signal)));
}
