import { createHandoffDeps, type HandoffDeps, type LoadedPlan, type Logger } from '@baton/core';
import type { KubeClients } from '@baton/kube';

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
