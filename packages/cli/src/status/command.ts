import { readReceipt } from '@baton/core';
import type { Command } from '@commander-js/extra-typings';
import { stringify } from 'yaml';
import { formatRows } from '../output/format.js';
import { clusterCommand, clusterTarget } from '../up/cluster-target.js';

/** `baton status`: show the in-cluster handoff receipt. Exit 1 when the cluster has none. */
export function statusCommand(): Command {
  return clusterCommand('status', 'show the handoff receipt the cluster carries (ConfigMap baton-receipt)').action(
    async (o) => {
      const { operator, namespace } = clusterTarget(o);
      const receipt = await readReceipt(operator, namespace);
      if (!receipt) {
        process.stderr.write(
          `baton: no handoff receipt in namespace ${namespace}: this cluster was never handed off by baton\n`,
        );
        process.exitCode = 1;
        return;
      }
      if (o.output === 'json') process.stdout.write(`${JSON.stringify(receipt, null, 2)}\n`);
      else if (o.output === 'yaml') process.stdout.write(stringify(receipt, { version: '1.1' }));
      else {
        const rows = Object.entries(receipt)
          .filter(([k]) => k !== 'auditCheckpoint')
          .map(([field, value]) => ({ field, value }));
        process.stdout.write(formatRows(rows, 'table', ['field', 'value']));
      }
    },
  );
}
