// Lists processes that still carry this test run's marker in their environment (they were started,
// directly or not, by the tests) and exits 1 if there are any. Usage: leftover-processes.mjs <runId> <excludePid>
import { readdirSync, readFileSync } from 'node:fs';

const [runId, exclude] = process.argv.slice(2);
const marker = `BATON_TEST_RUN_ID=${runId}`;
const left = [];
for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
  if (pid === exclude || pid === String(process.pid)) continue;
  try {
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    if (!env.includes(marker)) continue;
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    left.push(`${pid} ${cmd.slice(0, 200)}`);
  } catch {
    // The process ended while we looked.
  }
}
if (left.length > 0) {
  process.stderr.write(`processes left running after the tests:\n${left.join('\n')}\n`);
  process.exit(1);
}
