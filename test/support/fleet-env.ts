// `baton fleet up` run as a user runs it (the installed bin). The fleet's targets are @baton/testbed's.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import type { FleetResult } from '@baton/fleet';
import { CLI } from './handoff-run.js';

const execFileAsync = promisify(execFile);

/** `baton fleet up` as a user runs it: exit code, stdout (JSON with -o json), stderr. */
export async function fleetUp(args: readonly string[]): Promise<{
  code: number;
  stdout: string;
  stderr: string;
  result: FleetResult & { fleetRunId: string };
}> {
  const r = await execFileAsync(process.execPath, [CLI, 'fleet', 'up', ...args, '-o', 'json'], {
    maxBuffer: 64 * 1024 * 1024,
  }).then(
    (x) => ({ code: 0, stdout: x.stdout, stderr: x.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
  let result: FleetResult & { fleetRunId: string };
  try {
    result = JSON.parse(r.stdout) as typeof result;
  } catch {
    throw new Error(`baton fleet up printed no JSON (exit ${r.code}):\n${r.stderr.slice(-4000)}`);
  }
  return { ...r, result };
}

/** Spawns `baton fleet up` in its own process (to kill it with SIGKILL). */
export function spawnFleetUp(args: readonly string[]) {
  return spawn(process.execPath, [CLI, 'fleet', 'up', ...args, '-o', 'json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}
