import { readFile, writeFile } from 'node:fs/promises';
import { formatTlogProof, isFleetStatement, proveInclusion, verifyInclusion } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { Command } from '@commander-js/extra-typings';
import { intArg, keysFrom, print, say } from './cli-io.js';

/** `baton audit prove`: a C2SP tlog-proof for one entry, verifiable offline with `verify-proof`. */
export function proveCommand() {
  return new Command('prove')
    .description('write an inclusion proof for one entry (C2SP tlog-proof, entry included) to show a reviewer')
    .argument('<log>', 'audit log (.jsonl)')
    .argument('<index>', 'entry index (0-based)', intArg('<index>'))
    .option('-o, --output <file>', 'write the proof here instead of stdout')
    .option('--checkpoint <file>', 'prove against this checkpoint instead of the newest')
    .action(async (log, index, o) => {
      const proof = await proveInclusion(log, index, o.checkpoint ? { checkpoint: o.checkpoint } : {});
      const text = formatTlogProof(proof);
      if (o.output) {
        await writeFile(o.output, text);
        say(`wrote the proof for entry ${index} (${proof.hashes.length} hashes) to ${o.output}`);
        say(`check it with: baton audit verify-proof ${o.output} --keys <trusted-keys.yaml>`);
      } else print(text);
    });
}

/** `baton audit verify-proof`: checks a proof offline; exit 1 when it does not verify. */
export function verifyProofCommand() {
  return new Command('verify-proof')
    .description(
      'verify an inclusion proof from `baton audit prove` offline: checkpoint signature, path, entry signature',
    )
    .argument('<proof>', 'proof file (.tlog-proof)')
    .requiredOption('--keys <file>', 'trusted-keys file')
    .option('--json', 'print the result as JSON', false)
    .action(async (file, o) => {
      const keys = await keysFrom(o.keys);
      const text = await readFile(file, 'utf8').catch((err: Error) => {
        throw new ConfigError(`cannot read proof ${file}: ${err.message}`);
      });
      const verdict = verifyInclusion(text, keys);
      if (o.json) {
        const summary = verdict.ok
          ? {
              ok: true,
              index: verdict.index,
              treeSize: verdict.treeSize,
              event: verdict.entry.id,
              ...(isFleetStatement(verdict.statement)
                ? { fleet: verdict.statement.predicate.fleet.name }
                : { cluster: verdict.statement.predicate.cluster.name }),
            }
          : verdict;
        print(JSON.stringify(summary, null, 2));
      } else if (verdict.ok) {
        const s = verdict.statement;
        const what = isFleetStatement(s)
          ? `fleet ${s.predicate.fleet.name} ${s.predicate.phase}${s.predicate.outcome ? ` ${s.predicate.outcome}` : ''} (fleet run ${s.predicate.fleetRunId}, at ${verdict.entry.time})`
          : `${s.predicate.cluster.name} ${s.predicate.outcome} (run ${s.predicate.runId}, finished ${s.predicate.finishedAt})`;
        print(`verified: entry ${verdict.index} of ${verdict.treeSize} in ${keys.origin}: ${what}`);
      } else print(`proof FAILED (${verdict.kind}): ${file}: ${verdict.message}`);
      if (!verdict.ok) process.exitCode = 1;
    });
}
