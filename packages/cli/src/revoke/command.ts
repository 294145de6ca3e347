import { findBootstrapLeftovers, revokeBootstrapIdentity } from '@baton/kube';
import type { Command } from '@commander-js/extra-typings';
import { formatRows } from '../output/format.js';
import { clusterCommand, clusterTarget } from '../up/cluster-target.js';

/** `baton revoke`: remove bootstrap credentials left behind (e.g. by a run killed with kill -9). */
export function revokeCommand(): Command {
  return clusterCommand('revoke', 'find bootstrap credentials left by earlier runs (by label) and delete them').action(
    async (o) => {
      const { operator, namespace } = clusterTarget(o);
      const rows: Record<string, unknown>[] = [];
      for (const ref of await findBootstrapLeftovers(operator, namespace)) {
        const r = await revokeBootstrapIdentity(operator, ref, () => new Date());
        rows.push({
          runId: ref.runId,
          name: ref.name,
          deleted: r.deleted.length,
          secretDeletedAt: r.secretDeletedAt.toISOString(),
        });
      }
      if (rows.length === 0 && o.output === 'table') process.stdout.write(`no bootstrap leftovers in ${namespace}\n`);
      else process.stdout.write(formatRows(rows, o.output, ['runId', 'name', 'deleted', 'secretDeletedAt']));
    },
  );
}
