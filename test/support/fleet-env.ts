// `baton fleet up` run as a user runs it, from the sources. The fleet's targets are @baton/testbed's.
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FleetResult } from '@baton/fleet';

const execFileAsync = promisify(execFile);
const TSX = ['--conditions=@baton/source', '--import', 'tsx'];
const CLI = fileURLToPath(new URL('../../packages/cli/src/main.ts', import.meta.url));

/** `baton fleet up` as a user runs it: exit code, stdout (JSON with -o json), stderr. */
export async function fleetUp(args: readonly string[]): Promise<{
  code: number;
  stdout: string;
  stderr: string;
  result: FleetResult & { fleetRunId: string };
}> {
  const r = await execFileAsync(process.execPath, [...TSX, CLI, 'fleet', 'up', ...args, '-o', 'json'], {
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
  return spawn(process.execPath, [...TSX, CLI, 'fleet', 'up', ...args, '-o', 'json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}
