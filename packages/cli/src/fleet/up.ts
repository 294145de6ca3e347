import { hostname, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { createHandoffDeps, type HandoffSummary, systemClock } from '@baton/core';
import { ConfigError, TimeoutError } from '@baton/errors';
import {
  assignWaves,
  budgetCount,
  type FleetProgressEvent,
  type FleetResult,
  type FleetTarget,
  fleetExitCode,
  loadFleetFile,
  localHandoff,
  newFleetRunId,
  openFleetAudit,
  operatorKubeconfigPath,
  parseShard,
  renderTargets,
  runFleet,
  runJobFleet,
  runRecordedFleet,
  shardWaves,
  targetClients,
  type Wave,
} from '@baton/fleet';
import { budgetText, createFleetView, createRunLog, type PlanFacts, planFacts } from '@baton/fleet/progress';
import { clientsFromKubeconfigFile } from '@baton/kube';
import { Command, Option } from '@commander-js/extra-typings';
import { stringify } from 'yaml';
import { intArg } from '../audit/cli-io.js';
import { formatRows, OUTPUT_FORMATS } from '../output/format.js';
import { parseDurationMs } from '../up/command.js';

/** `baton fleet up`: hand off every cluster of a fleet file in waves. */
export function fleetUpCommand() {
  return new Command('up')
    .description('hand off every cluster of a fleet file, wave by wave, within the failure budget')
    .requiredOption('-f, --file <fleet.yaml>', 'fleet file')
    .addOption(
      new Option('--engine <engine>', 'where handoffs run')
        .choices(['local', 'job'] as const)
        .default('local' as const),
    )
    .option(
      '--kubeconfig <file>',
      'operator kubeconfig for clusters given by context (default: $KUBECONFIG, ~/.kube/config)',
    )
    .option('--management-kubeconfig <file>', 'management cluster: kubeconfig Secrets, and the Jobs of --engine job')
    .option('--shard <i/n>', 'hand off only slice i of n (0-based), e.g. from a CI matrix')
    .option('--concurrency <n>', 'handoffs at once within a wave (default: the fleet file)', intArg('--concurrency', 1))
    .option('--timeout <duration>', 'abort the run after this long (running handoffs still revoke and record)', '2h')
    .option('--verbose', 'the full log to stderr instead of a file', false)
    .addOption(new Option('-o, --output <format>', 'summary format').choices(OUTPUT_FORMATS).default('table' as const))
    .action(async (o) => {
      const timeoutMs = parseDurationMs(o.timeout);
      const shard = o.shard ? parseShard(o.shard) : undefined;
      const fleet = loadFleetFile(o.file);
      const targets = renderTargets(fleet);
      const byName = new Map(targets.map((t) => [t.name, t]));
      const waves: Wave<FleetTarget>[] = shardWaves(
        assignWaves(fleet.file, fleet.fleet).map((w) => ({ ...w, clusters: w.clusters.map((n) => byName.get(n)!) })),
        shard,
      );
      const mine = waves.flatMap((w) => w.clusters);
      // Every manifest set is checked before anything starts: a refused cluster means nothing is half-applied.
      const facts = new Map<string, PlanFacts>(mine.map((t) => [t.name, planFacts(t.loaded)]));
      const concurrency = o.concurrency ?? fleet.fleet.concurrency;
      const budget = budgetCount(fleet.fleet.failureBudget, mine.length);
      const management = o.managementKubeconfig ? clientsFromKubeconfigFile(o.managementKubeconfig) : undefined;
      if (o.engine === 'job' && !management)
        throw new ConfigError('--engine job needs --management-kubeconfig: the Jobs run on the management cluster');

      const operatorKubeconfig = operatorKubeconfigPath(o.kubeconfig, process.env);
      // Every cluster's credential source must resolve before anything starts (a missing context or Secret is bad
      // input, not a failed handoff).
      if (o.engine === 'local') {
        for (const t of mine)
          await targetClients(t, { operatorKubeconfig, management }).catch((err: unknown) => {
            if (err instanceof ConfigError && !err.message.includes(`cluster "${t.name}"`))
              throw new ConfigError(`${fleet.file}: cluster "${t.name}": ${err.message}`, { cause: err });
            throw err;
          });
      }

      const now = systemClock.now();
      const fleetRunId = newFleetRunId(now);
      const first = mine[0] ?? targets[0]!;
      const logFile = join(dirname(first.loaded.plan.journalDir), 'logs', `${fleetRunId}.log`);
      const view = createFleetView({
        out: process.stderr,
        waves,
        budget,
        facts: (c) => facts.get(c),
        steps: mine.length <= 50,
      });
      const { log, path } = createRunLog({ verbose: o.verbose, file: logFile, onRecord: (r) => view.onRecord(r) });
      process.stderr.write(
        `fleet ${fleet.name}: ${mine.length} cluster(s) in ${waves.length} wave(s)${shard ? ` (shard ${shard.index}/${shard.count})` : ''}, concurrency ${concurrency}, failure budget ${budget}, retries ${fleet.fleet.retries}; run ${fleetRunId}\n${path ? `full log: ${path}\n` : ''}`,
      );
      const audit = await openFleetAudit({ ...first.loaded.plan.audit, fleetRunId });
      const ac = new AbortController();
      // The listener stays for the whole run: a second Ctrl-C must not kill the process before every running handoff
      // has revoked.
      const onSignal = (sig: NodeJS.Signals) => {
        if (!ac.signal.aborted)
          ac.abort(new Error(`received ${sig}; running handoffs revoke, prove and record before exit`));
        else
          log.warn({ signal: sig }, 'still revoking, proving and recording; baton exits once every credential is dead');
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      const username = process.env.BATON_GIT_USERNAME;
      const password = process.env.BATON_GIT_PASSWORD;
      const gitAuth = username && password ? { username, password } : undefined;
      const timer = setTimeout(
        () => ac.abort(new TimeoutError(`baton fleet up --timeout ${o.timeout} reached`)),
        timeoutMs,
      );
      let result: FleetResult<HandoffSummary> | undefined;
      try {
        const common = {
          waves,
          concurrency,
          budget,
          retries: fleet.fleet.retries,
          clock: systemClock,
          signal: ac.signal,
          onEvent: (e: FleetProgressEvent) => view.onEvent(e),
        };
        const execute =
          o.engine === 'local'
            ? () =>
                runFleet<FleetTarget, HandoffSummary>({
                  ...common,
                  handoff: localHandoff({
                    depsFor: async (t, signal) =>
                      createHandoffDeps(t.loaded, await targetClients(t, { operatorKubeconfig, management }), {
                        via: 'fleet',
                        ...(gitAuth ? { gitAuth } : {}),
                        overrides: { log, signal, audit: audit.sink, onStep: (step) => view.onStep(t.name, step) },
                      }),
                  }),
                })
            : () => {
                const job = fleet.fleet.job;
                if (!job)
                  throw new ConfigError(
                    `${fleet.file}: --engine job needs a job section (image, namespace, serviceAccountName) in the fleet file`,
                  );
                return runJobFleet({
                  ...common,
                  log,
                  management: management!,
                  namespace: job.namespace,
                  image: job.image,
                  serviceAccountName: job.serviceAccountName,
                  ...(job.podLabels ? { podLabels: job.podLabels } : {}),
                  fleetRunId,
                  sink: audit.sink,
                });
              };
        const run = await runRecordedFleet<HandoffSummary>({
          execute,
          fleet,
          waves,
          shard,
          engine: o.engine,
          fleetRunId,
          actor: { user: safeUser(), host: hostname() },
          audit,
          clock: systemClock,
          concurrency,
          budget,
          retries: fleet.fleet.retries,
        });
        result = run.result;
        await view.close(result);
        printResult(o.output, fleet.name, fleetRunId, run.result, path);
        process.exitCode = fleetExitCode(run.result.outcome);
      } finally {
        if (!result) await view.close(undefined);
        clearTimeout(timer);
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await audit.close();
      }
    });
}

function printResult(
  format: (typeof OUTPUT_FORMATS)[number],
  name: string,
  fleetRunId: string,
  r: FleetResult<HandoffSummary>,
  logPath: string | undefined,
): void {
  const doc = { fleet: name, fleetRunId, ...r, ...(logPath ? { logPath } : {}) };
  if (format === 'json') {
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return;
  }
  if (format === 'yaml') {
    process.stdout.write(stringify(doc, { version: '1.1' }));
    return;
  }
  const rows = r.waves.flatMap((w) =>
    w.clusters.map((c) => ({
      wave: `${w.index + 1} ${w.name}`,
      cluster: c.name,
      status: c.status,
      attempts: c.attempts,
      seconds: c.durationMs ? (c.durationMs / 1000).toFixed(1) : '',
      detail: c.error ? `${c.failedStep ?? ''}: ${c.error}`.slice(0, 100) : (c.summary?.credential?.fingerprint ?? ''),
    })),
  );
  process.stdout.write(formatRows(rows, 'table', ['wave', 'cluster', 'status', 'attempts', 'seconds', 'detail']));
  const notStarted = r.notStarted.length > 0 ? `; never started: ${r.notStarted.join(', ')}` : '';
  process.stdout.write(`fleet ${name} ${r.outcome}: ${budgetText(r.budget)}${notStarted}\n`);
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}
