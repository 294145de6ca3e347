import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  createHandoffDeps,
  createLogger,
  type HandoffSummary,
  type LoadedPlan,
  RECEIPT_NAME,
  readReceipt,
  runHandoff,
} from '@baton/core';
import { BatonError, ConfigError, ErrorCode } from '@baton/errors';
import { clientsFromKubeconfigContent } from '@baton/kube';
import type * as pulumi from '@pulumi/pulumi';
import {
  ACCESS_INPUTS,
  firstDifference,
  type HandoffInputs,
  type InputFailure,
  validateInputs,
  withLoadedPlan,
} from './handoff-inputs.js';
import { failureMessage, type HandoffReceipt, receiptOf, refreshReceipt } from './handoff-receipt.js';

/**
 * When this module finished loading in the dynamic-provider host, and when that host's process started: the first
 * log line of a run carries both, so `pnpm bench:pulumi` can tell the host's start-up from the handoff.
 */
const providerTimings = {
  providerHostStartedAt: new Date(performance.timeOrigin).toISOString(),
  providerLoadedAt: new Date().toISOString(),
};

/** The provider's state of a handoff: its inputs and the receipt of the run that handed the cluster off. */
export type HandoffOutputs = HandoffInputs & { readonly receipt: HandoffReceipt };

/** Top-level inputs that hold secrets: a failure on them never names them as a property (see {@link checkHandoff}). */
const SECRET_INPUTS: readonly string[] = ['kubeconfig', 'pullCredential', 'pushSecrets'];

/**
 * Checks the inputs of a handoff: the plan schema's rules by property path and, once the cluster is handed off
 * (`olds` is the last handoff's inputs), refuses a change to what was pushed. `pulumi up --replace` checks without
 * `olds`, so a replacement is a new handoff.
 */
export function checkHandoff(olds: Partial<HandoffInputs>, news: HandoffInputs): InputFailure[] {
  const failures = validateInputs(news);
  if (failures.length === 0 && Object.keys(olds ?? {}).length > 0) {
    const changed = firstDifference(withoutAccess(olds), withoutAccess(news));
    if (changed !== undefined) {
      failures.push({
        property: changed,
        reason: `the cluster is handed off; change it in Git (the controller pulls ${news.controller.source.url}), or ask for a new handoff with \`pulumi up --replace <urn>\``,
      });
    }
  }
  // The engine prints the input value of a failure's top-level property: a secret one goes into the reason instead.
  return failures.map((f) =>
    SECRET_INPUTS.includes(f.property) ? { property: '', reason: `${f.property}: ${f.reason}` } : f,
  );
}

function withoutAccess(inputs: Partial<HandoffInputs>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(inputs).filter(([k]) => !ACCESS_INPUTS.includes(k)));
}

/** Options of {@link runProviderHandoff}; tests replace the run. */
export interface ProviderRunOptions {
  readonly run?: (loaded: LoadedPlan, inputs: HandoffInputs) => Promise<HandoffSummary>;
}

/**
 * Runs the whole handoff through `@baton/core` with the operator's kubeconfig from the inputs. The log goes to a file
 * beside the journal (the engine shows the plugin's stderr), named on stderr.
 * @throws {BatonError} with baton's one-paragraph message when the handoff did not hand the cluster off (it still
 * revoked and recorded), so the update fails and nothing enters the state.
 */
export async function runProviderHandoff(
  inputs: HandoffInputs,
  options: ProviderRunOptions = {},
): Promise<{ id: string; outs: HandoffOutputs }> {
  const failures = checkHandoff({}, inputs);
  if (failures.length > 0) {
    throw new ConfigError(
      `Handoff ${inputs.clusterName}: ${failures.map((f) => `${f.property || '<inputs>'}: ${f.reason}`).join('; ')}`,
    );
  }
  return withLoadedPlan(inputs, false, async (loaded) => {
    const summary = await (options.run ?? realRun)(loaded, inputs);
    const ok = summary.outcome === 'handed-off' || (summary.outcome === 'already-handed-off' && !summary.error);
    if (!ok) throw new BatonError(ErrorCode.process, failureMessage(summary), { details: { runId: summary.runId } });
    const declared = loaded.plan.pull.source.revision;
    if (summary.outcome === 'already-handed-off' && declared !== undefined && summary.revision !== declared) {
      // The state must not claim a revision the cluster does not pull (e.g. `--replace` with a new gitRevision).
      throw new ConfigError(
        `Handoff ${loaded.plan.cluster.name}: the cluster is already handed off at revision ${summary.revision}, not the declared ${declared}; a handed-off cluster follows Git: commit to ${loaded.plan.pull.source.url} (${loaded.plan.pull.source.ref}) instead of handing it off again`,
      );
    }
    const receipt = receiptOf(summary, `${loaded.plan.batonNamespace}/${RECEIPT_NAME}`);
    return { id: `${loaded.plan.cluster.name}/${summary.runId}`, outs: { ...inputs, receipt } };
  });
}

async function realRun(loaded: LoadedPlan, inputs: HandoffInputs): Promise<HandoffSummary> {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
  const logPath = join(dirname(loaded.plan.journalDir), 'logs', `pulumi-${loaded.plan.cluster.name}-${stamp}.log`);
  mkdirSync(dirname(logPath), { recursive: true });
  process.stderr.write(`baton: handing off cluster ${loaded.plan.cluster.name}; full log: ${logPath}\n`);
  const log = createLogger({ destination: { write: (line: string) => appendFileSync(logPath, line) } });
  log.info(providerTimings, 'provider host');
  const { username, password } = inputs.pullCredential;
  // The engine cancels a plugin with SIGINT/SIGTERM: the run aborts and still revokes, proves and records.
  const ac = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => ac.abort(new Error(`received ${sig}; revoking the bootstrap credential`));
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    return await runHandoff(
      loaded,
      createHandoffDeps(loaded, clientsFromKubeconfigContent(inputs.kubeconfig, inputs.context), {
        via: 'pulumi',
        ...(username && password ? { gitAuth: { username, password } } : {}),
        overrides: { log, signal: ac.signal },
      }),
    );
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
}

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
    return runProviderHandoff(inputs);
  },

  // Only the operator's access changed (diff says so): the handoff stands.
  async update(_id: string, olds: HandoffOutputs, news: HandoffInputs): Promise<pulumi.dynamic.UpdateResult> {
    return { outs: { ...news, receipt: olds.receipt } };
  },

  // `pulumi refresh`: the cluster's receipt, read with the operator's credential (the bootstrap one is dead).
  async read(id: string, props: HandoffOutputs): Promise<pulumi.dynamic.ReadResult> {
    const operator = clientsFromKubeconfigContent(props.kubeconfig, props.context);
    const inCluster = await readReceipt(operator, props.batonNamespace ?? 'baton-system');
    return { id, props: { ...props, receipt: refreshReceipt(props.receipt, inCluster) } };
  },

  async delete(_id: string, props: HandoffOutputs): Promise<void> {
    process.stderr.write(
      `baton: cluster ${props.clusterName} stays handed off: its ${props.controller.profile} controller keeps running and pulling from Git (pull owns it); only the handoff's record leaves the Pulumi state\n`,
    );
  },
};
