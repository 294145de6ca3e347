import { delimiter, join } from 'node:path';
import type { LoadedPlan } from '@baton/core';
import { ConfigError } from '@baton/errors';
import {
  clientsFromKubeconfigContent,
  clientsFromKubeconfigFile,
  clientsFromKubeconfigFiles,
  type KubeClients,
} from '@baton/kube';

/**
 * Resolves the operator's kubeconfig as kubectl does: --kubeconfig, then the plan (a path, or the text inline), then
 * $KUBECONFIG (a list merged by kubectl's rules; empty means unset), then ~/.kube/config.
 */
export function operatorClients(
  plan: LoadedPlan | undefined,
  kubeconfig: string | undefined,
  context: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): KubeClients {
  const inline = plan?.plan.cluster.kubeconfigContent;
  if (kubeconfig === undefined && inline !== undefined)
    return clientsFromKubeconfigContent(inline, context ?? plan?.plan.cluster.context);
  const ctx = context ?? plan?.plan.cluster.context;
  const path = kubeconfig ?? plan?.plan.cluster.kubeconfig;
  if (path) return clientsFromKubeconfigFile(path, ctx);
  const list = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  if (list.length > 0) return clientsFromKubeconfigFiles(list, ctx);
  if (!env.HOME)
    throw new ConfigError('no kubeconfig: pass --kubeconfig, set cluster.kubeconfig in the plan, or set KUBECONFIG');
  return clientsFromKubeconfigFile(join(env.HOME, '.kube', 'config'), ctx);
}
