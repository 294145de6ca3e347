import { readFileSync } from 'node:fs';

// The one PID check (audit's file lock, which the test bed's build and name locks use too, the handoff lock's
// stale-holder takeover, the bed's watchdog, the clusters `baton testenv down` stops).

/**
 * Whether a local process exists and can still act: `kill(pid, 0)` succeeds or is refused (EPERM: it exists, as
 * another user), and it is not a zombie (exited, not yet reaped, answering signal 0 but never releasing anything).
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as { code?: unknown }).code === 'EPERM';
  }
  return processStartTime(pid).zombie !== true;
}

/**
 * A process's start time (Linux clock ticks since boot, from /proc/<pid>/stat field 22), to notice a pid reused by a
 * newer process, and whether it is a zombie (field 3). Both stay unknown where /proc is missing.
 */
export function processStartTime(pid: number): { start?: string; zombie?: boolean } {
  try {
    // Synchronous on purpose: /proc reads never block, and this keeps the liveness helpers synchronous.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { start: fields[19]!, zombie: fields[0] === 'Z' };
  } catch {
    return {};
  }
}

/**
 * Whether the process recorded as `pid`, started at `start` (from {@link processStartTime}), still runs: alive, and
 * not a newer process the kernel gave the same pid. An unknown start on either side trusts the pid alone.
 */
export function isSameProcess(pid: number, start: string | undefined): boolean {
  if (!isProcessAlive(pid)) return false;
  const now = processStartTime(pid).start;
  return start === undefined || now === undefined || now === start;
}
