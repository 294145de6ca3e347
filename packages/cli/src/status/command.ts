import { readReceipt } from '@baton/core';
import { ageOf, type Field, isTimestamp, renderObject, screenOf, words } from '@baton/terminal';
import type { Command } from '@commander-js/extra-typings';
import { clusterCommand, clusterTarget } from '../shared/cluster-target.js';

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
      const fields = receiptFields(receipt, Date.now(), o.output === 'wide');
      process.stdout.write(renderObject(receipt, o.output, fields, screenOf()));
    },
  );
}

/**
 * The receipt as `key: value` lines: keys as words, times as ages (`handed off at: 5m ago`) and whole in `-o wide`,
 * nested values as JSON; the audit checkpoint (a signed note of many lines) only in `-o json|yaml`.
 */
export function receiptFields(receipt: object, now: number, wide: boolean): Field[] {
  return Object.entries(receipt)
    .filter(([k]) => k !== 'auditCheckpoint')
    .map(([k, v]): Field => {
      if (isTimestamp(v)) return [words(k), wide ? v : `${ageOf(v, now)} ago`];
      if (v === null || v === undefined) return [words(k), undefined];
      return [words(k), typeof v === 'object' ? JSON.stringify(v) : (v as string | number | boolean)];
    });
}
