import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  AuditLog,
  createHandoffEvent,
  DEFAULT_ORIGIN,
  parseTrustedKeys,
  readSigningKeyFile,
  synthRecords,
} from '@baton/audit';
import { Command } from '@commander-js/extra-typings';
import { intArg, say } from './cli-io.js';
import { TRUSTED_KEYS_FILE } from './keygen.js';

/** `baton audit synth`: a log of realistic synthetic handoffs, for trying the review commands and benchmarks. */
export function synthCommand() {
  return new Command('synth')
    .description('append N realistic synthetic handoff events to a log (no cluster needed)')
    .requiredOption('--count <n>', 'events to append', intArg('--count', 1))
    .requiredOption('--key <file>', 'private signing key (from `baton audit keygen`)')
    .requiredOption('-o, --output <log>', 'audit log to create or append to')
    .option('--origin <origin>', `log origin (default: from trusted-keys.yaml next to the key, else ${DEFAULT_ORIGIN})`)
    .option('--seed <n>', 'seed: the same seed gives the same events', intArg('--seed'), 1)
    .option('--clusters <n>', 'clusters the handoffs spread over', intArg('--clusters', 1), 24)
    .option('--batch <n>', 'events per append (one checkpoint each)', intArg('--batch', 1), 1000)
    .action(async (o) => {
      const key = await readSigningKeyFile(o.key);
      const origin = o.origin ?? (await originNextTo(o.key));
      const log = await AuditLog.open(o.output, { origin, signer: key });
      try {
        const first = log.size;
        let batch = [];
        for (const record of synthRecords(o.count, { seed: o.seed, clusters: o.clusters })) {
          batch.push(await createHandoffEvent(record, key));
          if (batch.length === o.batch) {
            await log.appendMany(batch);
            batch = [];
          }
        }
        if (batch.length > 0) await log.appendMany(batch);
        say(
          `appended ${o.count.toLocaleString('en')} events to ${o.output} (entries ${first} to ${log.size - 1}, origin ${origin})`,
        );
      } finally {
        await log.close();
      }
    });
}

async function originNextTo(keyFile: string): Promise<string> {
  const path = join(dirname(keyFile), TRUSTED_KEYS_FILE);
  const text = await readFile(path, 'utf8').catch(() => undefined);
  return text === undefined ? DEFAULT_ORIGIN : parseTrustedKeys(text, path).origin;
}
