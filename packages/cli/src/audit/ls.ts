import { type DecodedEntry, readEntries } from '@baton/audit';
import { ageOf, type Column, OUTPUT_FORMATS, renderRows, screenOf } from '@baton/terminal';
import { Command, Option } from '@commander-js/extra-typings';
import { intArg, print, timeArg } from './cli-io.js';

/** The row `ls` prints for one entry. */
export function entryRow(d: DecodedEntry) {
  const r = d.statement.predicate;
  return {
    index: d.index,
    finishedAt: r.finishedAt,
    cluster: r.cluster.name,
    outcome: r.outcome,
    failedStep: r.failedStep ?? '',
    actor: r.actor.user,
    via: r.actor.via,
    liveSeconds: r.credential?.liveSeconds ?? null,
    runId: r.runId,
  };
}

/** The filters of `baton audit ls`; an unset one lets every entry through. */
interface EntryFilters {
  readonly cluster?: string;
  readonly outcome?: string;
  /** Epoch milliseconds: finished at or after. */
  readonly since?: number;
  /** Epoch milliseconds: finished before. */
  readonly until?: number;
  /** Text the actor's user contains. */
  readonly actor?: string;
}

function matchesFilters(d: DecodedEntry, f: EntryFilters): boolean {
  const r = d.statement.predicate;
  const finished = Date.parse(r.finishedAt);
  return (
    (f.cluster === undefined || r.cluster.name === f.cluster) &&
    (f.outcome === undefined || r.outcome === f.outcome) &&
    (f.since === undefined || finished >= f.since) &&
    (f.until === undefined || finished < f.until) &&
    (f.actor === undefined || r.actor.user.includes(f.actor))
  );
}

/** `baton audit ls`: lists handoffs, newest last, with filters. */
export function lsCommand() {
  return new Command('ls')
    .description('list the handoffs in a log (decoded, not verified: use `baton audit verify` for that)')
    .argument('<log>', 'audit log (.jsonl)')
    .option('--cluster <name>', 'only this cluster')
    .addOption(
      new Option('--outcome <outcome>', 'only this outcome').choices([
        'handed-off',
        'failed',
        'aborted',
        'tampered',
      ] as const),
    )
    .option('--since <time>', 'finished at or after (RFC 3339, or an age like 24h, 7d)', timeArg('--since'))
    .option('--until <time>', 'finished before (RFC 3339, or an age like 24h, 7d)', timeArg('--until'))
    .option('--actor <text>', 'actor user contains this text')
    .option('--last <n>', 'only the last n matches', intArg('--last', 1))
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table' as const))
    .action(async (log, o) => {
      const rows: ReturnType<typeof entryRow>[] = [];
      for await (const d of readEntries(log)) {
        if (!matchesFilters(d, o)) continue;
        rows.push(entryRow(d));
        // Keep memory bounded on a large log when only the tail is wanted.
        if (o.last !== undefined && rows.length > o.last * 2) rows.splice(0, rows.length - o.last);
      }
      const shown = o.last !== undefined ? rows.slice(-o.last) : rows;
      print(renderRows(shown, o.output, entryColumns(Date.now()), screenOf()));
    });
}

type EntryRow = ReturnType<typeof entryRow>;

/**
 * The table of `audit ls`: when as an age (the time in `-o wide`), long identities shortened; the actor and the run
 * id only where they fit (always in `-o wide`).
 */
export function entryColumns(now: number): Column<EntryRow>[] {
  return [
    { header: 'INDEX', value: (r) => String(r.index) },
    { header: 'AGE', value: (r) => ageOf(r.finishedAt, now) },
    { header: 'FINISHED AT', value: (r) => r.finishedAt, wide: true },
    { header: 'CLUSTER', value: (r) => r.cluster, shrink: 'middle' },
    { header: 'OUTCOME', value: (r) => r.outcome },
    { header: 'FAILED STEP', value: (r) => r.failedStep },
    { header: 'ACTOR', value: (r) => r.actor, shrink: 'middle', optional: true },
    { header: 'VIA', value: (r) => r.via, wide: true },
    { header: 'LIVE (S)', value: (r) => (r.liveSeconds === null ? '' : String(r.liveSeconds)) },
    { header: 'RUN ID', value: (r) => r.runId, shrink: 'middle', optional: true },
  ];
}
