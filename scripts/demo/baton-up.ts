// The demo's `--via cli` path, and the baseline of `pnpm bench:pulumi`'s handoff: `baton up`'s engine in-process.
import { createHandoffDeps, type HandoffSummary, type Logger, loadHandoffPlan, runHandoff } from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';
import type { ControllerSide, HandoffBed } from '@baton/testenv/beds';

/**
 * Runs the bed's plan through `runHandoff` with the collaborators every entry point builds (createHandoffDeps); the
 * plan pins the revision, which the bed's Git server holds.
 * @throws {ConfigError} when the plan file is refused; a failed handoff is a summary, not a throw.
 */
export function batonUpInProcess(
  bed: HandoffBed<ControllerSide>,
  log: Logger,
  signal: AbortSignal,
  onStep?: (step: string) => void,
): Promise<HandoffSummary> {
  const loaded = loadHandoffPlan(bed.side.planPath);
  const deps = createHandoffDeps(loaded, clientsFromKubeconfigFile(bed.kubeconfigPath), {
    overrides: { log, resolveRevision: async () => bed.side.revision, signal },
  });
  return runHandoff(loaded, onStep ? { ...deps, onStep } : deps);
}
