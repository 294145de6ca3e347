import { hostname, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { createHandoffDeps, type HandoffSummary, systemClock } from '@baton/core';
import { ConfigError, TimeoutError } from '@baton/errors';
import {
  assignWaves,
  budgetCount,
  defaultShardImage,
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
import { budgetText, createFleetView } from '@baton/fleet/progress';
import { clientsFromKubeconfigFile } from '@baton/kube';
import { createRunLog, type PlanFacts, planFacts } from '@baton/progress';
import { type Column, OUTPUT_FORMATS, renderTable, screenOf } from '@baton/terminal';
import { Command, Option } from '@commander-js/extra-typings';
import { stringify } from 'yaml';
import { intArg } from '../audit/cli-io.js';
import { parseDurationMs } from '../shared/duration.js';

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
      const plan = await planFleetUp(o);
      const { fleet, waves, mine, shard, concurrency, budget } = plan;
      const fleetRunId = newFleetRunId(systemClock.now());
      const logFile = join(dirname(plan.first.loaded.plan.journalDir), 'logs', `${fleetRunId}.log`);
      const view = createFleetView({
        out: process.stderr,
        waves,
        budget,
        facts: (c) => plan.facts.get(c),
        steps: mine.length <= 50,
      });
      const { log, path } = createRunLog({ verbose: o.verbose, file: logFile, onRecord: (r) => view.onRecord(r) });
      process.stderr.write(
        `fleet ${fleet.name}: ${mine.length} cluster(s) in ${waves.length} wave(s)${shard ? ` (shard ${shard.index}/${shard.count})` : ''}, concurrency ${concurrency}, failure budget ${budget}, retries ${fleet.fleet.retries}; run ${fleetRunId}\n${path ? `full log: ${path}\n` : ''}`,
      );
      const audit = await openFleetAudit({ ...plan.first.loaded.plan.audit, fleetRunId });
      const ac = new AbortController();
      const detachSignals = abortOnSignals(ac, log);
      const timer = setTimeout(
        () => ac.abort(new TimeoutError(`baton fleet up --timeout ${o.timeout} reached`)),
        timeoutMs,
      );
      let result: FleetResult<HandoffSummary> | undefined;
      try {
        const run = await runRecordedFleet<HandoffSummary>({
          execute: fleetEngine(o.engine, plan, { fleetRunId, log, audit, view, signal: ac.signal }),
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
        detachSignals();
        await audit.close();
      }
    });
}

/** The flags of `baton fleet up` that shape the run. */
interface FleetUpFlags {
  readonly file: string;
  readonly engine: 'local' | 'job';
  readonly kubeconfig?: string | undefined;
  readonly managementKubeconfig?: string | undefined;
  readonly shard?: string | undefined;
  readonly concurrency?: number | undefined;
}

/** What `fleet up` settles before any handoff starts. */
interface FleetUpPlan {
  readonly fleet: ReturnType<typeof loadFleetFile>;
  readonly waves: Wave<FleetTarget>[];
  /** The clusters of this shard, in wave order. */
  readonly mine: FleetTarget[];
  /** Whose plan names the journal and audit log of the fleet run. */
  readonly first: FleetTarget;
  readonly facts: ReadonlyMap<string, PlanFacts>;
  readonly shard: ReturnType<typeof parseShard> | undefined;
  readonly concurrency: number;
  readonly budget: number;
  readonly management: ReturnType<typeof clientsFromKubeconfigFile> | undefined;
  readonly operatorKubeconfig: ReturnType<typeof operatorKubeconfigPath>;
}

/**
 * Loads the fleet file and checks everything that is bad input rather than a failed handoff, before anything starts:
 * every manifest set (a refused cluster means nothing is half-applied), the engine's needs, every credential source.
 * @throws ConfigError naming the fleet file and cluster.
 */
async function planFleetUp(o: FleetUpFlags): Promise<FleetUpPlan> {
  const shard = o.shard ? parseShard(o.shard) : undefined;
  const fleet = loadFleetFile(o.file);
  const targets = renderTargets(fleet);
  const byName = new Map(targets.map((t) => [t.name, t]));
  const waves: Wave<FleetTarget>[] = shardWaves(
    assignWaves(fleet.file, fleet.fleet).map((w) => ({ ...w, clusters: w.clusters.map((n) => byName.get(n)!) })),
    shard,
  );
  const mine = waves.flatMap((w) => w.clusters);
  const facts = new Map<string, PlanFacts>(mine.map((t) => [t.name, planFacts(t.loaded)]));
  const management = o.managementKubeconfig ? clientsFromKubeconfigFile(o.managementKubeconfig) : undefined;
  if (o.engine === 'job' && !management)
    throw new ConfigError('--engine job needs --management-kubeconfig: the Jobs run on the management cluster');
  const operatorKubeconfig = operatorKubeconfigPath(o.kubeconfig, process.env);
  if (o.engine === 'local') {
    for (const t of mine) await resolveCredentialSource(fleet.file, t, operatorKubeconfig, management);
  }
  return {
    fleet,
    waves,
    mine,
    first: mine[0] ?? targets[0]!,
    facts,
    shard,
    concurrency: o.concurrency ?? fleet.fleet.concurrency,
    budget: budgetCount(fleet.fleet.failureBudget, mine.length),
    management,
    operatorKubeconfig,
  };
}

/** @throws ConfigError naming the fleet file and cluster when its context or Secret does not resolve. */
async function resolveCredentialSource(
  file: string,
  t: FleetTarget,
  operatorKubeconfig: FleetUpPlan['operatorKubeconfig'],
  management: FleetUpPlan['management'],
): Promise<void> {
  await targetClients(t, { operatorKubeconfig, management }).catch((err: unknown) => {
    if (err instanceof ConfigError && !err.message.includes(`cluster "${t.name}"`))
      throw new ConfigError(`${file}: cluster "${t.name}": ${err.message}`, { cause: err });
    throw err;
  });
}

/** What the engines share with the rest of the run. */
interface FleetRunContext {
  readonly fleetRunId: string;
  readonly log: ReturnType<typeof createRunLog>['log'];
  readonly audit: Awaited<ReturnType<typeof openFleetAudit>>;
  readonly view: ReturnType<typeof createFleetView>;
  readonly signal: AbortSignal;
}

/** The chosen engine, ready to run the waves: handoffs in this process, or Indexed Jobs on the management cluster. */
function fleetEngine(
  engine: FleetUpFlags['engine'],
  plan: FleetUpPlan,
  run: FleetRunContext,
): () => Promise<FleetResult<HandoffSummary>> {
  const { fleet, management, operatorKubeconfig } = plan;
  const common = {
    waves: plan.waves,
    concurrency: plan.concurrency,
    budget: plan.budget,
    retries: fleet.fleet.retries,
    clock: systemClock,
    signal: run.signal,
    onEvent: (e: FleetProgressEvent) => run.view.onEvent(e),
  };
  if (engine === 'local') {
    const username = process.env.BATON_GIT_USERNAME;
    const password = process.env.BATON_GIT_PASSWORD;
    const gitAuth = username && password ? { username, password } : undefined;
    return () =>
      runFleet<FleetTarget, HandoffSummary>({
        ...common,
        handoff: localHandoff({
          depsFor: async (t, signal) =>
            createHandoffDeps(t.loaded, await targetClients(t, { operatorKubeconfig, management }), {
              via: 'fleet',
              ...(gitAuth ? { gitAuth } : {}),
              overrides: {
                log: run.log,
                signal,
                audit: run.audit.sink,
                onStep: (step) => run.view.onStep(t.name, step),
              },
            }),
        }),
      });
  }
  return () => {
    const job = fleet.fleet.job;
    if (!job)
      throw new ConfigError(
        `${fleet.file}: --engine job needs a job section (namespace, serviceAccountName; image defaults to the pinned baton image) in the fleet file`,
      );
    return runJobFleet({
      ...common,
      log: run.log,
      management: management!,
      namespace: job.namespace,
      image: job.image ?? defaultShardImage(),
      serviceAccountName: job.serviceAccountName,
      ...(job.podLabels ? { podLabels: job.podLabels } : {}),
      fleetRunId: run.fleetRunId,
      sink: run.audit.sink,
    });
  };
}

/**
 * SIGINT and SIGTERM abort the run; the listener stays for the whole run, so a second Ctrl-C does not kill the
 * process before every running handoff has revoked. Returns what removes the listeners.
 */
function abortOnSignals(ac: AbortController, log: FleetRunContext['log']): () => void {
  const onSignal = (sig: NodeJS.Signals) => {
    if (!ac.signal.aborted)
      ac.abort(new Error(`received ${sig}; running handoffs revoke, prove and record before exit`));
    else log.warn({ signal: sig }, 'still revoking, proving and recording; baton exits once every credential is dead');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
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
      detail: c.error ? `${c.failedStep ?? ''}: ${c.error}` : (c.summary?.credential?.fingerprint ?? ''),
    })),
  );
  process.stdout.write(renderTable(rows, FLEET_COLUMNS, { width: screenOf().width, wide: format === 'wide' }));
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

/** One cluster of a fleet run in the table `fleet up` prints at the end. */
interface FleetRow {
  readonly wave: string;
  readonly cluster: string;
  readonly status: string;
  readonly attempts: number;
  readonly seconds: string;
  readonly detail: string;
}

/** The fleet's table: the detail (an error, or the credential's fingerprint) cut to fit, whole in `-o wide`. */
export const FLEET_COLUMNS: readonly Column<FleetRow>[] = [
  { header: 'WAVE', value: (r) => r.wave, shrink: 'end' },
  { header: 'CLUSTER', value: (r) => r.cluster, shrink: 'middle' },
  { header: 'STATUS', value: (r) => r.status },
  { header: 'ATTEMPTS', value: (r) => String(r.attempts) },
  { header: 'SECONDS', value: (r) => r.seconds },
  { header: 'DETAIL', value: (r) => r.detail, shrink: 'end' },
];
