// Prints the plain closing line `N passed, N failed` from vitest's JSON report, and fails when no test ran.
import { readFileSync } from 'node:fs';

const path = process.argv[2];
let report;
try {
  report = JSON.parse(readFileSync(path, 'utf8'));
} catch (err) {
  process.stdout.write(`0 passed, 1 failed\n`);
  process.stderr.write(`no vitest report at ${path}: ${err.message}\n`);
  process.exit(1);
}
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
if (passed + failed === 0 || failed > 0 || skipped > 0) process.exit(1);
