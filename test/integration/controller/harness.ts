// What only the controller's own tests use; the rest of its environment is @baton/testbed's (bench/controller.ts
// runs it too).
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Writable } from 'node:stream';
import { type RunningController, startController } from '@baton/controller';
import { createLogger, type Logger } from '@baton/core';
import {
  CLUSTER_PATH,
  type ControllerEnv,
  controllerManifests,
  type gitSyncStatus,
  NS,
  tokenClient,
} from '@baton/testbed';

/** The example source repository (apps part; the controller part is copied from the push set). */
const SOURCE_REPO_FIXTURE = new URL('../../fixtures/source-repo', import.meta.url).pathname;

/** Every file of the example source repository: the push set under `baton-controller/` plus the apps. */
export async function sourceRepoFiles(repoUrl: string, intervalSeconds = 5): Promise<Record<string, string>> {
  const files = await controllerManifests(repoUrl, intervalSeconds);
  const walk = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.name.endsWith('.yaml')) files[relative(SOURCE_REPO_FIXTURE, p)] = await readFile(p, 'utf8');
    }
  };
  await walk(join(SOURCE_REPO_FIXTURE, CLUSTER_PATH, 'apps'));
  return files;
}

/** A JSON logger whose output is kept in memory, to assert that no secret reaches it. */
export function capturedLogger(): { log: Logger; text: () => string } {
  const chunks: string[] = [];
  const destination = { write: (s: string) => chunks.push(s) } as unknown as Writable;
  return { log: createLogger({ level: 'debug', destination: destination as never }), text: () => chunks.join('') };
}

/** Starts the controller in-process with its own ServiceAccount token, on an ephemeral loopback port. */
export async function startTestController(
  env: ControllerEnv,
  token: string,
  log: Logger,
  identity = 'replica-a',
): Promise<RunningController> {
  const workDir = await mkdtemp(join(tmpdir(), 'baton-controller-'));
  env.workDirs.push(workDir);
  return startController({
    kube: tokenClient(env.cluster, token),
    log,
    namespace: NS,
    identity,
    workDir,
    port: 0,
    host: '127.0.0.1',
    leaseDurationSeconds: 6,
    leaseRetryMs: 500,
    retryBaseMs: 1_000,
  });
}

/** The status of condition `type`. */
export function condition(status: Awaited<ReturnType<typeof gitSyncStatus>>, type: string) {
  return status?.conditions?.find((c) => c.type === type);
}
