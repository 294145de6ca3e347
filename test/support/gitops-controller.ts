import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { APPLY_ORDER } from '@baton/core';
import { clientsFromKubeconfigFile, clientsFromToken, type KubeObject, serverSideApply } from '@baton/kube';
import { parseAllDocuments } from 'yaml';

const execFileAsync = promisify(execFile);

/** Options of {@link startTestController}. */
export interface TestControllerOptions {
  readonly kubeconfigPath: string;
  readonly repoUrl: string;
  readonly credentials: { readonly username: string; readonly password: string };
  readonly ref?: string;
  readonly path: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly deployment: string;
  readonly statusName: string;
  readonly fieldManager?: string;
  readonly intervalMs?: number;
}

/** A running test controller. */
export interface TestController {
  /** Reconciles so far. */
  readonly reconciles: () => number;
  readonly lastError: () => string | undefined;
  stop(): Promise<void>;
}

/**
 * The controller side of a handoff, as a small in-process loop, until baton's controller runs in tests: once its
 * Deployment exists (kwok would start the pod), it gets its own ServiceAccount token (as a projected token would),
 * fetches the Git revision with the read-only pull credential, server-side-applies every manifest under `path` with
 * field manager `baton-controller` (force: it takes ownership from `baton-bootstrap`), and writes a status
 * ConfigMap with the applied revision. It never uses the admin credential for anything but the token request.
 */
export function startTestController(o: TestControllerOptions): TestController {
  const admin = clientsFromKubeconfigFile(o.kubeconfigPath);
  const ac = new AbortController();
  let count = 0;
  let lastError: string | undefined;
  let token: string | undefined;
  const loop = (async () => {
    while (!ac.signal.aborted) {
      try {
        if (await exists(() => admin.apps.readNamespacedDeployment({ namespace: o.namespace, name: o.deployment }))) {
          token ??= (
            await admin.core.createNamespacedServiceAccountToken({
              namespace: o.namespace,
              name: o.serviceAccount,
              body: { spec: { expirationSeconds: 3600, audiences: [] } },
            })
          ).status?.token;
          const self = clientsFromToken(admin, token ?? '');
          const { revision, objects } = await fetchRevision(o);
          await serverSideApply(self, objects, {
            fieldManager: o.fieldManager ?? 'baton-controller',
            force: true,
            signal: ac.signal,
          });
          await serverSideApply(
            self,
            [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                metadata: { name: o.statusName, namespace: o.namespace },
                data: { revision },
              },
            ],
            { fieldManager: o.fieldManager ?? 'baton-controller', force: true },
          );
          count++;
          lastError = undefined;
        }
      } catch (err) {
        lastError = (err as Error).message;
      }
      await new Promise((r) => setTimeout(r, o.intervalMs ?? 300));
    }
  })();
  return {
    reconciles: () => count,
    lastError: () => lastError,
    async stop() {
      ac.abort();
      await loop;
    },
  };
}

async function exists(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return true;
  } catch {
    return false;
  }
}

async function fetchRevision(o: TestControllerOptions): Promise<{ revision: string; objects: KubeObject[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'test-controller-'));
  const basic = Buffer.from(`${o.credentials.username}:${o.credentials.password}`).toString('base64');
  const env = {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
  try {
    await execFileAsync('git', ['clone', '--quiet', '--depth', '1', '--branch', o.ref ?? 'main', o.repoUrl, dir], {
      env,
    });
    const { stdout } = await execFileAsync('git', ['rev-parse', 'HEAD'], { cwd: dir });
    const files = (await readdir(join(dir, o.path))).filter((f) => /\.ya?ml$/.test(f)).sort();
    const objects: KubeObject[] = [];
    for (const f of files) {
      for (const d of parseAllDocuments(await readFile(join(dir, o.path, f), 'utf8'), { version: '1.1' }) as ReturnType<
        typeof parseAllDocuments
      > &
        unknown[]) {
        const js = d.toJS() as KubeObject | null;
        if (js) objects.push(js);
      }
    }
    objects.sort((a, b) => APPLY_ORDER.indexOf(a.kind) - APPLY_ORDER.indexOf(b.kind));
    return { revision: stdout.trim(), objects };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
