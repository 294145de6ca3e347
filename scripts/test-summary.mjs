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
const failed = report.numFailedTests ?? 0;
const suitesFailed = report.numFailedTestSuites ?? 0;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
const line = `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
process.stdout.write(`${line}\n`);
if (suitesFailed > 0) process.stderr.write(`${suitesFailed} test file(s) failed to load or run\n`);
if (passed + failed === 0 || failed > 0 || suitesFailed > 0 || skipped > 0) process.exit(1);
