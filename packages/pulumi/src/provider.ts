import type * as pulumi from '@pulumi/pulumi';
import { checkHandoff, firstDifference, type HandoffInputs, withoutAccess } from './handoff-inputs.js';
import type { HandoffOutputs } from './provider-run.js';

export { checkHandoff } from './handoff-inputs.js';
export type { HandoffOutputs, ProviderRunOptions } from './provider-run.js';

/**
 * When this module finished loading in the dynamic-provider host, and when that host's process started: the first
 * log line of a run carries both, so `pnpm bench:pulumi` can tell the host's start-up from the handoff.
 */
const providerTimings = {
  providerHostStartedAt: new Date(performance.timeOrigin).toISOString(),
  providerLoadedAt: new Date().toISOString(),
};

// The run's module graph (core, the Kubernetes clients, the audit log) loads on the first create or read only.
const run = () => import('./provider-run.js');

/**
 * The dynamic provider of a handoff. It runs in Pulumi's dynamic-provider host, which loads it by package name
 * (`@baton/pulumi/provider`): nothing of this module graph is serialized into the state.
 */
export const handoffProvider = {
  async check(olds: Partial<HandoffInputs>, news: HandoffInputs): Promise<pulumi.dynamic.CheckResult> {
    return { inputs: news, failures: checkHandoff(olds, news) };
  },

  async diff(_id: string, olds: HandoffOutputs, news: HandoffInputs): Promise<pulumi.dynamic.DiffResult> {
    const { receipt: _receipt, ...oldInputs } = olds;
    const changed = firstDifference(withoutAccess(oldInputs), withoutAccess(news));
    if (changed !== undefined) {
      // Only reached by `--replace` (check refuses the change otherwise): a new handoff.
      return { changes: true, replaces: [changed.split('.')[0]!], deleteBeforeReplace: false };
    }
    return { changes: firstDifference(oldInputs, news) !== undefined };
  },

  async create(inputs: HandoffInputs): Promise<pulumi.dynamic.CreateResult> {
    return (await run()).runProviderHandoff(inputs, { timings: providerTimings });
  },

  // Only the operator's access changed (diff says so): the handoff stands.
  async update(_id: string, olds: HandoffOutputs, news: HandoffInputs): Promise<pulumi.dynamic.UpdateResult> {
    return { outs: { ...news, receipt: olds.receipt } };
  },

  // `pulumi refresh`: the cluster's receipt, read with the operator's credential (the bootstrap one is dead).
  async read(id: string, props: HandoffOutputs): Promise<pulumi.dynamic.ReadResult> {
    return (await run()).readHandoff(id, props);
  },

  async delete(_id: string, props: HandoffOutputs): Promise<void> {
    process.stderr.write(
      `baton: cluster ${props.clusterName} stays handed off: its ${props.controller.profile} controller keeps running and pulling from Git (pull owns it); only the handoff's record leaves the Pulumi state\n`,
    );
  },
};
