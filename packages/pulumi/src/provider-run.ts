// The handoff itself, loaded by the dynamic provider only when it creates or reads a handoff: @baton/core's run,
// the Kubernetes clients and the audit log stay out of the preview's check and diff, and out of the program.
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
import { checkHandoff, type HandoffInputs, withLoadedPlan } from './handoff-inputs.js';
import { failureMessage, type HandoffReceipt, receiptOf, refreshReceipt } from './handoff-receipt.js';

/** When this module finished loading: the run's first log line carries it beside the provider's own timings. */
const runLoadedAt = new Date().toISOString();

/** The provider's state of a handoff: its inputs and the receipt of the run that handed the cluster off. */
export type HandoffOutputs = HandoffInputs & { readonly receipt: HandoffReceipt };

/** Options of {@link runProviderHandoff}; tests replace the run. */
export interface ProviderRunOptions {
  readonly run?: (loaded: LoadedPlan, inputs: HandoffInputs) => Promise<HandoffSummary>;
  /** When the provider host started and loaded the provider: logged first, for `pnpm bench:pulumi`. */
  readonly timings?: Readonly<Record<string, string>>;
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
    const summary = await (options.run ?? ((l, i) => realRun(l, i, options.timings ?? {})))(loaded, inputs);
    const ok = summary.outcome === 'handed-off' || (summary.outcome === 'already-handed-off' && !summary.error);
    // The handoff's own code (tampered, timeout, confinement …): the engine shows it, and a program can branch on it.
    if (!ok)
      throw new BatonError(summary.errorCode ?? ErrorCode.internal, failureMessage(summary), {
        details: { runId: summary.runId, outcome: summary.outcome },
      });
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

async function realRun(
  loaded: LoadedPlan,
  inputs: HandoffInputs,
  timings: Readonly<Record<string, string>>,
): Promise<HandoffSummary> {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
  const logPath = join(dirname(loaded.plan.journalDir), 'logs', `pulumi-${loaded.plan.cluster.name}-${stamp}.log`);
  mkdirSync(dirname(logPath), { recursive: true });
  process.stderr.write(`baton: handing off cluster ${loaded.plan.cluster.name}; full log: ${logPath}\n`);
  const log = createLogger({ destination: { write: (line: string) => appendFileSync(logPath, line) } });
  log.info({ ...timings, runLoadedAt }, 'provider host');
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

/** `pulumi refresh`: the cluster's receipt, read with the operator's credential (the bootstrap one is dead). */
export async function readHandoff(id: string, props: HandoffOutputs): Promise<{ id: string; props: HandoffOutputs }> {
  const operator = clientsFromKubeconfigContent(props.kubeconfig, props.context);
  const inCluster = await readReceipt(operator, props.batonNamespace ?? 'baton-system');
  return { id, props: { ...props, receipt: refreshReceipt(props.receipt, inCluster) } };
}
