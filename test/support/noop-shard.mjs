// A shard that does nothing: for measuring the real Job controller over many indexes. Appends
// `<index> <start ms> <end ms>` to the file named by its first argument and exits 1 for the indexes listed
// (comma-separated) in its second argument, 0 otherwise.
import { appendFileSync } from 'node:fs';
import { setTimeout } from 'node:timers/promises';

const [log, failing = ''] = process.argv.slice(2);
const index = Number(process.env.JOB_COMPLETION_INDEX);
const start = Date.now();
await setTimeout(200);
appendFileSync(log, `${index} ${start} ${Date.now()}\n`);
process.exitCode = failing.split(',').includes(String(index)) ? 1 : 0;
