import { writeFile } from 'node:fs/promises';
import { buildReport } from '@baton/audit';
import { Command } from '@commander-js/extra-typings';
import { intArg, keysFrom, say } from './cli-io.js';

/** `baton audit report`: one self-contained HTML page for reviewers. */
export function reportCommand() {
  return new Command('report')
    .description('write a self-contained HTML review page: timeline, credential windows, failures, verification result')
    .argument('<log>', 'audit log (.jsonl)')
    .requiredOption('-o, --output <file>', 'HTML file to write')
    .option('--keys <file>', 'trusted-keys file: verify the log and show the result (recommended)')
    .option('--recent <n>', 'handoffs shown in detail', intArg('--recent', 1), 300)
    .action(async (log, o) => {
      const keys = o.keys ? await keysFrom(o.keys) : undefined;
      const { html, model } = await buildReport(log, { ...(keys ? { keys } : {}), recent: o.recent });
      await writeFile(o.output, html);
      const v = model.verification;
      const status = !v
        ? 'not verified (no --keys)'
        : v.ok
          ? 'verified'
          : `verification FAILED: ${v.failures[0]!.kind}`;
      say(`wrote ${o.output}: ${model.totals.handoffs.toLocaleString('en')} handoffs, ${status}`);
      if (v && !v.ok) process.exitCode = 1;
    });
}
