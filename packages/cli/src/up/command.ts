import { dirname, join } from 'node:path';
import { type HandoffSummary, loadHandoffPlan, runHandoff } from '@baton/core';
import { isBatonError, TimeoutError } from '@baton/errors';
import { createRunLog, createStepView, planFacts } from '@baton/progress';
import { OUTPUT_FORMATS, renderFields, screenOf } from '@baton/terminal';
import { Command, Option } from '@commander-js/extra-typings';
import { stringify } from 'yaml';
import { parseDurationMs } from '../shared/duration.js';
import { SKIP_IMAGE_VERIFY_FLAG, SKIP_IMAGE_VERIFY_WARNING } from '../shared/image-verify-flag.js';
import { operatorClients } from '../shared/operator-clients.js';
import { cliHandoffDeps } from './handoff-deps.js';
import { summaryFields } from './summary-fields.js';

/** `baton up`: run a handoff from a plan. */
export function upCommand(): Command {
  return new Command('up')
    .description(
      'hand a cluster from push to pull: scoped throwaway credential, minimal push, real takeover, revoke, proof, audit',
    )
    .requiredOption('--plan <file>', 'handoff plan (YAML)')
    .option('--kubeconfig <file>', 'operator kubeconfig (default: the plan, $KUBECONFIG, ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context')
    .option('--timeout <duration>', 'abort the whole run after this long (the credential is still revoked)', '10m')
    .option('--verbose', 'the full log to stderr instead of a file', false)
    .option(
      SKIP_IMAGE_VERIFY_FLAG,
      'push the images without verifying their signatures against the trust policy (loud; the audit event records it)',
      false,
    )
    .addOption(new Option('-o, --output <format>', 'summary format').choices(OUTPUT_FORMATS).default('table' as const))
    .addHelpText(
      'after',
      `
Environment:
  KUBECONFIG            kubeconfig files, merged as kubectl does (used when neither --kubeconfig nor the plan names one)
  BATON_GIT_USERNAME    with BATON_GIT_PASSWORD: the Git credential that resolves an unpinned pull.source.ref
  BATON_GIT_PASSWORD    (default: the plan's pull credential, pull.credential.fromFile)`,
    )
    .action(async (o) => {
      // -o json|yaml prints one object whatever happens: a refusal (a bad plan, a cluster preflight refuses, a lock
      // held by another run) is `outcome: refused` with its error, before the error goes to stderr and the exit code.
      try {
        await up(o);
      } catch (err) {
        if (o.output === 'json' || o.output === 'yaml') printSummary(refusal(o.plan, err), o.output);
        throw err;
      }
    });
}

/** What `-o json|yaml` prints when the run is refused before anything was created. */
export function refusal(planPath: string, err: unknown) {
  return {
    outcome: 'refused' as const,
    plan: planPath,
    errorCode: isBatonError(err) ? err.code : 'internal',
    error: err instanceof Error ? err.message : String(err),
  };
}

function printSummary(summary: object, output: 'json' | 'yaml'): void {
  if (output === 'json') process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else process.stdout.write(stringify(summary, { version: '1.1' }));
}

interface UpOptions {
  readonly plan: string;
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly timeout: string;
  readonly verbose: boolean;
  readonly insecureSkipImageVerify: boolean;
  readonly output: (typeof OUTPUT_FORMATS)[number];
}

async function up(o: UpOptions): Promise<void> {
  const timeoutMs = parseDurationMs(o.timeout);
  const loaded = loadHandoffPlan(o.plan);
  // Each step with its duration and key fact on stderr; the full log to a file (or stderr with --verbose).
  const view = createStepView({ out: process.stderr, facts: planFacts(loaded) });
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
  const { log, path } = createRunLog({
    verbose: o.verbose,
    file: join(dirname(loaded.plan.journalDir), 'logs', `up-${loaded.plan.cluster.name}-${stamp}.log`),
    onRecord: view.onRecord,
  });
  if (path) process.stderr.write(`full log: ${path}\n`);
  if (o.insecureSkipImageVerify) process.stderr.write(SKIP_IMAGE_VERIFY_WARNING);
  const operator = operatorClients(loaded, o.kubeconfig, o.context);
  const ac = new AbortController();
  // The listener stays for the whole run: a second Ctrl-C must not kill the process before it has revoked.
  const onSignal = (sig: NodeJS.Signals) => {
    if (!ac.signal.aborted) ac.abort(new Error(`received ${sig}; revoking the bootstrap credential before exit`));
    else log.warn({ signal: sig }, 'still revoking, proving and recording; baton exits once the credential is dead');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const timer = setTimeout(() => ac.abort(new TimeoutError(`baton up --timeout ${o.timeout} reached`)), timeoutMs);
  let summary: HandoffSummary | undefined;
  try {
    summary = await runHandoff(loaded, {
      ...cliHandoffDeps(loaded, operator, log, ac.signal, { skipImageVerify: o.insecureSkipImageVerify }),
      onStep: view.onStep,
    });
    await view.finish(summary);
    if (o.output === 'json' || o.output === 'yaml') printSummary(summary, o.output);
    else
      process.stdout.write(
        renderFields(summaryFields(summary), { width: screenOf().width, wide: o.output === 'wide' }),
      );
    const ok = summary.outcome === 'handed-off' || (summary.outcome === 'already-handed-off' && !summary.error);
    process.exitCode = ok ? 0 : 1;
  } finally {
    if (!summary) await view.finish(undefined);
    clearTimeout(timer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
