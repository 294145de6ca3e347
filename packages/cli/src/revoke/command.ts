import { removeBootstrapLeftover, scanBootstrapObjects } from '@baton/kube';
import type { Command } from '@commander-js/extra-typings';
import { formatRows } from '../output/format.js';
import { clusterCommand, clusterTarget } from '../up/cluster-target.js';

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
    const rows: Record<string, unknown>[] = [];
    for (const ref of scan.leftovers) {
      const r = await removeBootstrapLeftover(operator, ref, () => new Date());
      rows.push({
        runId: ref.runId,
        name: ref.name,
        deleted: r.deleted.length,
        secretDeletedAt: r.secretDeletedAt.toISOString(),
      });
    }
    if (rows.length === 0 && o.output === 'table') process.stdout.write(`no bootstrap leftovers in ${namespace}\n`);
    else process.stdout.write(formatRows(rows, o.output, ['runId', 'name', 'deleted', 'secretDeletedAt']));
  });
}
