// Prints the plain closing line `N passed, N failed` from vitest's JSON report, and fails when no test ran. Before it,
// writes each file's wall time to `file-durations.json` beside the report and prints the ten slowest files: where a
// run's time goes.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const path = process.argv[2];
let report;
try {
  report = JSON.parse(readFileSync(path, 'utf8'));
} catch (err) {
  process.stdout.write(`0 passed, 1 failed\n`);
  process.stderr.write(`no vitest report at ${path}: ${err.message}\n`);
  process.exit(1);
}
const files = (report.testResults ?? [])
  .map((f) => ({
    file: relative(process.cwd(), f.name),
    seconds: Math.round(((f.endTime ?? 0) - (f.startTime ?? 0)) / 100) / 10,
    tests: (f.assertionResults ?? []).length,
    status: f.status,
  }))
  .sort((a, b) => b.seconds - a.seconds);
writeFileSync(join(dirname(path), 'file-durations.json'), `${JSON.stringify(files, null, 2)}\n`);
const total = files.reduce((t, f) => t + f.seconds, 0);
process.stdout.write(`slowest files (of ${files.length}, ${Math.round(total)} s of file time in all):\n`);
for (const f of files.slice(0, 10))
  process.stdout.write(`  ${f.seconds.toFixed(1).padStart(7)} s  ${String(f.tests).padStart(3)} tests  ${f.file}\n`);
const passed = report.numPassedTests ?? 0;
// A file that fails to load has no failed test of its own: count it as one failure so the line shows it.
const brokenFiles = (report.testResults ?? []).filter(
  (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed'),
);
const failed = (report.numFailedTests ?? 0) + brokenFiles.length;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
const line = `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
process.stdout.write(`${line}\n`);
for (const f of brokenFiles)
  process.stderr.write(`failed to load or run: ${f.name}: ${String(f.message ?? '').slice(0, 300)}\n`);
// A failure that names a component log ("see …/coredns.log"; a failed bed start keeps its logs) gets that log's
// tail here, so a CI run that shows only this output can still be diagnosed.
const messages = (report.testResults ?? []).flatMap((f) => [
  String(f.message ?? ''),
  ...(f.assertionResults ?? []).flatMap((a) => a.failureMessages ?? []),
]);
const logs = new Set(messages.flatMap((m) => [...m.matchAll(/see (\/\S+\.log)\b/g)].map((x) => x[1])));
for (const log of [...logs].slice(0, 5)) {
  if (!existsSync(log)) continue;
  const tail = readFileSync(log, 'utf8').trimEnd().split('\n').slice(-30);
  process.stderr.write(`--- last ${tail.length} lines of ${log}\n${tail.map((l) => l.slice(0, 400)).join('\n')}\n`);
}
if (passed + failed === 0 || failed > 0 || skipped > 0) process.exit(1);
