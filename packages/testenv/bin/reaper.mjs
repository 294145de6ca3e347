#!/usr/bin/env node
// Watchdog for one local cluster: when the owning process dies without stopping the cluster (a test
// runner killed with SIGKILL, a crashed CLI), kill every component's process group and remove the data.
// Plain JS with no dependencies so that it starts in milliseconds and never needs a build step.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const [ownerArg, dir] = process.argv.slice(2);
const owner = Number.parseInt(ownerArg ?? '', 10);
if (!Number.isFinite(owner) || !dir) process.exit(2);

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
};
// Start time in clock ticks since boot (/proc/<pid>/stat field 22), as state.json records it beside each pid.
const startOf = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
};
// A pid now held by a newer process (a component that died earlier, its pid reused) is not ours to signal.
const reused = (pid, recorded) => {
  if (recorded === undefined || !alive(pid)) return false;
  const now = startOf(pid);
  return now !== undefined && now !== recorded;
};
const readState = () => {
  try {
    return JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8'));
  } catch {
    return undefined;
  }
};
const killGroups = (pids, signal) => {
  for (const pid of pids) {
    try {
      process.kill(-pid, signal);
    } catch {}
  }
};

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => {});
const timer = setInterval(() => {
  if (!existsSync(dir)) process.exit(0);
  if (alive(owner)) return;
  clearInterval(timer);
  const state = readState();
  const pids = Object.entries(state?.pids ?? {})
    .filter(([name, p]) => Number.isInteger(p) && !reused(p, state?.starts?.[name]))
    .map(([, p]) => p);
  killGroups(pids, 'SIGTERM');
  setTimeout(() => {
    killGroups(pids, 'SIGKILL');
    // A real node's containers, mounts, cgroups and network namespace outlive its processes.
    try {
      execFileSync(process.execPath, [new URL('./node-teardown.mjs', import.meta.url).pathname, dir], {
        stdio: 'ignore',
        timeout: 60_000,
      });
    } catch {}
    if (!state?.keep) rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }, 3000);
}, 250);
