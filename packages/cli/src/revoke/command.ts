import { removeBootstrapLeftover, scanBootstrapObjects } from '@baton/kube';
import { ageOf, type Column, renderRows, screenOf } from '@baton/terminal';
import type { Command } from '@commander-js/extra-typings';
import { clusterCommand, clusterTarget } from '../shared/cluster-target.js';

/** `baton revoke`: remove bootstrap credentials and confinements left behind (e.g. by a run killed with kill -9). */
export function revokeCommand(): Command {
  return clusterCommand(
    'revoke',
    'find bootstrap credentials and confinements left by earlier runs and delete them (only objects baton created)',
  ).action(async (o) => {
    const { operator, namespace } = clusterTarget(o);
    const scan = await scanBootstrapObjects(operator, namespace);
    for (const s of scan.suspicious) {
      process.stderr.write(
        `not deleted: ${s}; it carries baton's bootstrap labels, inspect it and remove it by hand\n`,
      );
    }
    const rows: LeftoverRow[] = [];
    for (const ref of scan.leftovers) {
      const r = await removeBootstrapLeftover(operator, ref, () => new Date());
      rows.push({
        runId: ref.runId,
        name: ref.name,
        deleted: r.deleted.length,
        secretDeletedAt: r.secretDeletedAt.toISOString(),
      });
    }
    if (rows.length === 0 && (o.output === 'table' || o.output === 'wide'))
      process.stdout.write(`no bootstrap leftovers in ${namespace}\n`);
    else process.stdout.write(renderRows(rows, o.output, leftoverColumns(Date.now()), screenOf()));
  });
}

/** One removed leftover, as `-o json|yaml` prints it. */
interface LeftoverRow {
  readonly runId: string;
  readonly name: string;
  readonly deleted: number;
  readonly secretDeletedAt: string;
}

/** The table of removed leftovers: the Secret's deletion as an age, its time in `-o wide`. */
export function leftoverColumns(now: number): Column<LeftoverRow>[] {
  return [
    { header: 'RUN ID', value: (r) => r.runId, shrink: 'middle' },
    { header: 'NAME', value: (r) => r.name, shrink: 'middle' },
    { header: 'DELETED', value: (r) => String(r.deleted) },
    { header: 'SECRET DELETED', value: (r) => ageOf(r.secretDeletedAt, now) },
    { header: 'SECRET DELETED AT', value: (r) => r.secretDeletedAt, wide: true },
  ];
}
