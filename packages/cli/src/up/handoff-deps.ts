import { createHandoffDeps, type HandoffDeps, type LoadedPlan, type Logger } from '@baton/core';
import { ConfigError } from '@baton/errors';
import { clientsFromKubeconfigContent, clientsFromKubeconfigFile, type KubeClients } from '@baton/kube';

/**
 * Resolves the operator's kubeconfig as kubectl does: --kubeconfig, then the plan (a path, or the text inline), then
 * $KUBECONFIG, then ~/.kube/config.
 */
export function operatorClients(
  plan: LoadedPlan | undefined,
  kubeconfig: string | undefined,
  context: string | undefined,
): KubeClients {
  const inline = plan?.plan.cluster.kubeconfigContent;
  if (kubeconfig === undefined && inline !== undefined)
    return clientsFromKubeconfigContent(inline, context ?? plan?.plan.cluster.context);
  const path =
    kubeconfig ??
    plan?.plan.cluster.kubeconfig ??
    process.env.KUBECONFIG?.split(':')[0] ??
    `${process.env.HOME ?? ''}/.kube/config`;
  if (!path)
    throw new ConfigError('no kubeconfig: pass --kubeconfig, set cluster.kubeconfig in the plan, or set KUBECONFIG');
  return clientsFromKubeconfigFile(path, context ?? plan?.plan.cluster.context);
}

/** The real collaborators of a CLI handoff. Git credentials for resolving the ref come from BATON_GIT_USERNAME/PASSWORD. */
export function cliHandoffDeps(
  loaded: LoadedPlan,
  operator: KubeClients,
  log: Logger,
  signal: AbortSignal,
): HandoffDeps {
  const username = process.env.BATON_GIT_USERNAME;
  const password = process.env.BATON_GIT_PASSWORD;
  return createHandoffDeps(loaded, operator, {
    ...(username && password ? { gitAuth: { username, password } } : {}),
    overrides: { log, signal },
  });
}
