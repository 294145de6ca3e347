import { type DecodedEntry, readEntries } from '@baton/audit';
import { Command, Option } from '@commander-js/extra-typings';
import { formatRows, OUTPUT_FORMATS } from '../output/format.js';
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

/** `baton audit ls`: lists handoffs, newest last, with filters. */
export function lsCommand() {
  return new Command('ls')
    .description('list the handoffs in a log (decoded, not verified: use `baton audit verify` for that)')
    .argument('<log>', 'audit log (.jsonl)')
    .option('--cluster <name>', 'only this cluster')
    .addOption(
      new Option('--outcome <outcome>', 'only this outcome').choices(['handed-off', 'failed', 'aborted'] as const),
    )
    .option('--since <time>', 'finished at or after (RFC 3339, or an age like 24h, 7d)', timeArg('--since'))
    .option('--until <time>', 'finished before (RFC 3339, or an age like 24h, 7d)', timeArg('--until'))
    .option('--actor <text>', 'actor user contains this text')
    .option('--last <n>', 'only the last n matches', intArg('--last', 1))
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table' as const))
    .action(async (log, o) => {
      const rows: ReturnType<typeof entryRow>[] = [];
      for await (const d of readEntries(log)) {
        const r = d.statement.predicate;
        const finished = Date.parse(r.finishedAt);
        if (o.cluster !== undefined && r.cluster.name !== o.cluster) continue;
        if (o.outcome !== undefined && r.outcome !== o.outcome) continue;
        if (o.since !== undefined && finished < o.since) continue;
        if (o.until !== undefined && finished >= o.until) continue;
        if (o.actor !== undefined && !r.actor.user.includes(o.actor)) continue;
        rows.push(entryRow(d));
        // Keep memory bounded on a large log when only the tail is wanted.
        if (o.last !== undefined && rows.length > o.last * 2) rows.splice(0, rows.length - o.last);
      }
      const shown = o.last !== undefined ? rows.slice(-o.last) : rows;
      print(
        formatRows(shown, o.output, [
          'index',
          'finishedAt',
          'cluster',
          'outcome',
          'failedStep',
          'actor',
          'liveSeconds',
          'runId',
        ]),
      );
    });
}
