import { readFile } from 'node:fs/promises';
import { type TrustedKeySet, type VerifyResult, verifyLog, verifySigstoreBundle } from '@baton/audit';
import { ConfigError } from '@baton/errors';
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
    .argument('<log>', "audit log (.jsonl), or one handoff's Sigstore bundle (<log>.bundles/<run id>.sigstore.json)")
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
      if (log.endsWith('.sigstore.json')) {
        process.exitCode = await verifyBundleFile(log, keys, o.json);
        return;
      }
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

/**
 * `baton audit verify` of one handoff's Sigstore bundle: prints what it vouches for, or why it does not verify.
 * @returns the exit code: 0 verified, 1 a bundle that does not verify (a finding, as for a log).
 * @throws {ConfigError} when the file cannot be read or is not JSON.
 */
async function verifyBundleFile(path: string, keys: TrustedKeySet, json: boolean): Promise<number> {
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new ConfigError(`cannot read ${path}: ${err.code ?? err.message}`);
  });
  let bundle: unknown;
  try {
    bundle = JSON.parse(text);
  } catch {
    throw new ConfigError(`${path}: not JSON; a Sigstore bundle is the JSON baton writes beside the log`);
  }
  let verified: ReturnType<typeof verifySigstoreBundle>;
  try {
    verified = verifySigstoreBundle(bundle, keys, path);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    print(
      json
        ? JSON.stringify({ ok: false, bundle: path, error: err.message }, null, 2)
        : `verification FAILED for ${err.message}`,
    );
    return 1;
  }
  const { predicateType, subject } = verified.statement;
  const key = verified.key;
  print(
    json
      ? JSON.stringify({ ok: true, bundle: path, key: key.verifierKey, predicateType, subject }, null, 2)
      : `verified ${path}: a ${predicateType} statement about ${subject.length} subjects, signed by ${key.name}+${key.keyId.toString('hex')}`,
  );
  return 0;
}
