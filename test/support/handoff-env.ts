import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatTrustedKeys, generateSigningKey, writeSigningKeyFile } from '@baton/audit';
import { type LoadedPlan, loadHandoffPlan } from '@baton/core';
import { type GitServer, startGitServer } from '@baton/testenv/git';
import { parse, stringify } from 'yaml';

/** The test controller profile's manifests. */
export const CONTROLLER_MANIFESTS = fileURLToPath(new URL('../fixtures/handoff/controller', import.meta.url));
const PLAN_FIXTURE = fileURLToPath(new URL('../fixtures/handoff/plan.yaml', import.meta.url));

/** Everything a handoff needs besides a cluster: a Git server holding the controller, a key, and a plan file. */
export interface HandoffEnv {
  readonly dir: string;
  readonly git: GitServer;
  readonly repoUrl: string;
  /** The commit the controller must reconcile. */
  readonly revision: string;
  readonly planPath: string;
  readonly loaded: LoadedPlan;
  readonly auditLogPath: string;
  readonly keysPath: string;
  stop(): Promise<void>;
}

/** Options of {@link createHandoffEnv}. */
export interface HandoffEnvOptions {
  readonly kubeconfigPath: string;
  /** Changes to the plan (deep-merged one level). */
  readonly plan?: Record<string, Record<string, unknown>>;
  /** Manifest directory to push. @default the test controller profile */
  readonly manifests?: string;
  /** Reuse a Git server. */
  readonly git?: GitServer;
}

/**
 * Starts a Git server (or reuses one), commits the controller profile under `controller/`, writes a signing key,
 * trusted-keys file and a plan pointing at all of it, in a fresh temporary folder.
 */
export async function createHandoffEnv(o: HandoffEnvOptions): Promise<HandoffEnv> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-handoff-'));
  const git = o.git ?? (await startGitServer());
  const repo = `gitops-${Math.random().toString(36).slice(2, 8)}`;
  await git.createRepo(repo);
  const files: Record<string, string> = {};
  for (const f of readdirSync(CONTROLLER_MANIFESTS))
    files[`controller/${f}`] = readFileSync(join(CONTROLLER_MANIFESTS, f), 'utf8');
  const revision = await git.commitFiles(repo, files, 'controller');
  await mkdir(join(dir, 'audit'));
  const key = generateSigningKey('baton-test');
  await writeSigningKeyFile(join(dir, 'audit', 'signing.key'), key);
  const keysPath = join(dir, 'audit', 'trusted-keys.yaml');
  const plan = parse(readFileSync(PLAN_FIXTURE, 'utf8'), { version: '1.1' }) as Record<string, Record<string, unknown>>;
  plan.cluster = { ...plan.cluster, kubeconfig: o.kubeconfigPath };
  plan.push = { ...plan.push, manifests: o.manifests ?? CONTROLLER_MANIFESTS };
  plan.pull = { ...plan.pull, source: { url: git.repoUrl(repo), ref: 'main', path: 'controller', revision } };
  plan.audit = {
    ...plan.audit,
    logPath: join(dir, 'audit', 'handoff.log'),
    signingKeyPath: join(dir, 'audit', 'signing.key'),
  };
  for (const [k, v] of Object.entries(o.plan ?? {})) plan[k] = { ...plan[k], ...v };
  const origin = String(plan.audit?.origin ?? 'baton.dev/handoff');
  writeFileSync(keysPath, formatTrustedKeys({ origin, keys: [{ key: key.verifierKey }] }));
  const planPath = join(dir, 'plan.yaml');
  writeFileSync(planPath, stringify({ ...plan, journalDir: join(dir, 'journal') }, { version: '1.1' }));
  return {
    dir,
    git,
    repoUrl: git.repoUrl(repo),
    revision,
    planPath,
    loaded: loadHandoffPlan(planPath),
    auditLogPath: join(dir, 'audit', 'handoff.log'),
    keysPath,
    async stop() {
      if (!o.git) await git.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
