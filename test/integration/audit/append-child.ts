// A separate writer process for the concurrency and crash tests:
//   node --conditions=@baton/source --import tsx append-child.ts <log> <key> <count> <seed> [forever]
// Appends <count> synthetic events in batches of 1..19 (so appends interleave with the other writers'), or, with
// `forever`, appends batches of 200 until it is killed.
import { AuditLog, createHandoffEvent, readSigningKeyFile, synthRecords } from '@baton/audit';

const [logPath, keyPath, countText, seedText, mode] = process.argv.slice(2);
const key = await readSigningKeyFile(keyPath!);
const log = await AuditLog.open(logPath!, { origin: 'test.baton.dev/audit', signer: key, lockTimeoutMs: 120_000 });
const seed = Number(seedText);
if (mode === 'forever') {
  const events = await Promise.all([...synthRecords(200, { seed })].map((r) => createHandoffEvent(r, key)));
  for (;;) await log.appendMany(events);
}
const events = await Promise.all([...synthRecords(Number(countText), { seed })].map((r) => createHandoffEvent(r, key)));
for (let i = 0, batch = 1; i < events.length; i += batch, batch = (batch % 19) + 1) {
  await log.appendMany(events.slice(i, i + batch));
}
await log.close();
process.stdout.write(`appended ${events.length}\n`);
