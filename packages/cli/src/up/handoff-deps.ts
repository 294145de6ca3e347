import { delimiter, join } from 'node:path';
import { createHandoffDeps, type HandoffDeps, type LoadedPlan, type Logger } from '@baton/core';
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

/** The flag that pushes images unverified (`baton up` and `baton plan`). */
export const SKIP_IMAGE_VERIFY_FLAG = '--insecure-skip-image-verify';

/** What baton prints to stderr first when images go unverified: it must not be missed in a pipeline's log. */
export const SKIP_IMAGE_VERIFY_WARNING =
  'WARNING: --insecure-skip-image-verify: the images are pushed without verifying their signatures; the audit event records that they were not verified\n';

/**
 * The real collaborators of a CLI handoff. An unpinned `pull.source.ref` is resolved with the plan's pull credential;
 * BATON_GIT_USERNAME and BATON_GIT_PASSWORD, when both are set, override it (a CI token that may list refs).
 */
export function cliHandoffDeps(
  loaded: LoadedPlan,
  operator: KubeClients,
  log: Logger,
  signal: AbortSignal,
  options: { readonly skipImageVerify?: boolean } = {},
): HandoffDeps {
  const username = process.env.BATON_GIT_USERNAME;
  const password = process.env.BATON_GIT_PASSWORD;
  return createHandoffDeps(loaded, operator, {
    ...(username && password ? { gitAuth: { username, password } } : {}),
    overrides: { log, signal, ...(options.skipImageVerify ? { images: { skipVerify: true } } : {}) },
  });
}
