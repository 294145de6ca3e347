import { type VerifyResult, verifyLog } from '@baton/audit';
import { Command } from '@commander-js/extra-typings';
import { intArg, keysFrom, print, say } from './cli-io.js';

/** One line per failure for humans; the message already names file, line, rule and fix. */
export function describeVerifyResult(r: VerifyResult, seconds: number): string {
  if (r.ok) {
    const root = r.root ? `, root ${r.root.slice(0, 16)}…` : '';
    return (
      `verified ${r.log}: ${r.entries.toLocaleString('en')} entries, ${r.trustedCheckpoints.toLocaleString('en')} trusted checkpoints ` +
      `(newest covers ${r.checkpointedSize.toLocaleString('en')}${root}), origin ${r.origin}, in ${seconds.toFixed(1)} s`
    );
  }
  const first = r.failures[0]!;
  const lines = [
    `verification FAILED for ${r.log}: ${r.failureCount} problem(s); first: ${first.kind}${first.index !== undefined ? ` at entry ${first.index}` : ''}`,
    ...r.failures.slice(0, 10).map((f) => `  ${f.kind}: ${f.message}`),
  ];
  if (r.failureCount > 10) lines.push(`  … and ${r.failureCount - 10} more (--json lists up to ${r.failures.length})`);
  return lines.join('\n');
}

/** `baton audit verify`: exit 0 only when every entry and checkpoint verifies. */
export function verifyCommand() {
  return new Command('verify')
    .description(
      'verify every signature, the Merkle root against each signed checkpoint, order and schema; exit 1 on any failure',
    )
    .argument('<log>', 'audit log (.jsonl)')
    .requiredOption('--keys <file>', 'trusted-keys file (from `baton audit keygen`)')
    .option('--json', 'print the full result as JSON on stdout', false)
    .option('--workers <n>', 'worker threads (default: 2 for large logs, 0 for small ones)', intArg('--workers'))
    .option(
      '--checkpoint <file>',
      'also check a checkpoint kept elsewhere (repeatable): catches a log cut back together with its checkpoints',
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .action(async (log, o) => {
      const keys = await keysFrom(o.keys);
      const started = performance.now();
      const result = await verifyLog(log, keys, {
        ...(o.workers !== undefined ? { workers: o.workers } : {}),
        extraCheckpoints: o.checkpoint,
      });
      const seconds = (performance.now() - started) / 1000;
      if (o.json) print(JSON.stringify(result, null, 2));
      else {
        print(describeVerifyResult(result, seconds));
        for (const w of result.warnings) say(`warning: ${w}`);
      }
      if (!result.ok) process.exitCode = 1;
    });
}
