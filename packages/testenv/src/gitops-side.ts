// What every controller side of a bed has, whatever the controller (baton-controller, Flux, Argo CD): a directory, a
// Git server at the node address, the pull credential, the audit keys, and the profile's rules beside the push set.
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';
import { stringify } from 'yaml';
import { type GitServer, startGitServer } from './git-server.js';
import type { RealNodeInfo } from './real-node-info.js';

/** Where the audit signing key and its trusted-keys file go; the caller writes them (testenv knows no audit format). */
export interface AuditKeyPaths {
  /** The plan's `audit.signingKeyPath`. */
  readonly signingKeyPath: string;
  /** The trusted-keys file `baton audit verify --keys` reads. */
  readonly keysPath: string;
}

/** What a handoff to any controller needs: a Git repository holding what it pulls, a plan, and its pods running. */
export interface ControllerSide extends AuditKeyPaths, SideBase {
  /** The commit Git is at. */
  readonly revision: string;
  readonly planPath: string;
  /** The rendered push set (the profile pointing at this Git server). */
  readonly pushDir: string;
  /** The Git path the controller reconciles. */
  readonly gitPath: string;
  /** Files committed under the Git path, keyed by their path in Git. */
  readonly files: Readonly<Record<string, string>>;
  /** The images the bed's copy of the profile pins (repository → the reference with its local digest). */
  readonly images: Readonly<Record<string, string>>;
  /** `pull.yaml` (username, password), mode 0600. */
  readonly pullCredentialPath: string;
  /** Secret values written to the plan's files, so callers can assert they never reach an output. */
  readonly secretValues: readonly string[];
}

/**
 * The real node a controller side needs: its Pods are started by kubelet, and nothing else starts them.
 * @throws ConfigError naming the bed and the fix.
 */
export function requireRealNode(realNode: RealNodeInfo | null | undefined, what: string): RealNodeInfo {
  if (!realNode)
    throw new ConfigError(
      `${what} needs a real node (its controller runs as a Pod that kubelet starts): start the cluster with node: 'real' (\`--node real\`), not a kwok node`,
    );
  return realNode;
}

/** What a side of a GitOps controller built from Go modules (Flux, Argo CD) is started with, whatever the controller. */
export interface GitOpsSideOptions {
  /** Admin kubeconfig of the cluster (the plan's `cluster.kubeconfig`). */
  readonly kubeconfigPath: string;
  /** The plan's `cluster.name`. @default 'e2e' */
  readonly clusterName?: string;
  /** bootstrap-manifests/<profile>: the install set, `rules/profile.yaml` and `example/` (what Git carries besides). */
  readonly profileDir: string;
  /** Progress lines of the controller's build (elapsed time against its usual duration). */
  readonly onBuildProgress?: (line: string) => void;
  /** Directory for the plan, the push set, the credential files, the audit log and the journal. @default a new temp dir */
  readonly dir?: string;
  /** Writes a signing key and its trusted-keys file at these paths (e.g. with @baton/audit). */
  readonly writeAuditKeys: (paths: AuditKeyPaths) => Promise<void>;
  /** The password the push hands the controller for Git. @default the Git server's (a wrong one: it never syncs) */
  readonly pullPassword?: string;
  /** `takeover.timeoutSeconds` of the plan. @default the side's */
  readonly takeoverTimeoutSeconds?: number;
  /**
   * What the controller may apply from Git: the profile's scoped reconciler role, or upstream's cluster-admin (the
   * profile's `options/` binding pushed too, and the plan's `controller.privilege` says so). @default 'scoped'
   */
  readonly privilege?: 'scoped' | 'cluster-admin';
}

/** What every controller side has besides its own parts: its directory, its Git server, the audit log and journal. */
export interface SideBase {
  readonly dir: string;
  readonly git: GitServer;
  readonly auditLogPath: string;
  readonly journalDir: string;
  /** Stops the Git server; removes `dir` unless `keepFiles`. */
  stop(options?: { readonly keepFiles?: boolean }): Promise<void>;
}

/**
 * Creates the side's directory (`dirOption` or a new temp dir) and its Git server in the bed (at the node address),
 * then `build`s the rest; when `build` throws, the Git server stops and the directory goes.
 */
export async function startSide<T extends object>(
  dirOption: string | undefined,
  tmpPrefix: string,
  realNode: RealNodeInfo,
  build: (dir: string, git: GitServer) => Promise<T>,
): Promise<T & SideBase> {
  const dir = dirOption ?? mkdtempSync(join(tmpdir(), tmpPrefix));
  const git = await startGitServer({ inBed: realNode });
  try {
    await mkdir(dir, { recursive: true });
    const side = await build(dir, git);
    return {
      ...side,
      dir,
      git,
      auditLogPath: join(dir, 'audit', 'handoff.log'),
      journalDir: join(dir, 'journal'),
      async stop(options = {}) {
        await git.stop();
        if (!options.keepFiles) await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await git.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Copies the profile's rules (`rules/profile.yaml`: takeover rules and the plan's controller block) into the push set,
 * where core finds them; the push reads only the top level as manifests.
 */
export function copyProfileRules(profileDir: string, pushDir: string): void {
  mkdirSync(join(pushDir, 'rules'), { recursive: true });
  cpSync(join(profileDir, 'rules', 'profile.yaml'), join(pushDir, 'rules', 'profile.yaml'));
}

/** Writes `pull.yaml` (username, password; mode 0600) in `dir`: the plan's pull.credential.fromFile. */
export function writePullCredential(dir: string, c: { readonly username: string; readonly password: string }): string {
  const path = join(dir, 'pull.yaml');
  writeFileSync(path, stringify({ username: c.username, password: c.password }), { mode: 0o600 });
  return path;
}

/** Has the caller write the audit signing key and its trusted-keys file under `dir/audit`. */
export async function writeAuditKeyFiles(
  dir: string,
  write: (paths: AuditKeyPaths) => Promise<void>,
): Promise<AuditKeyPaths> {
  await mkdir(join(dir, 'audit'), { recursive: true });
  const keys = { signingKeyPath: join(dir, 'audit', 'signing.key'), keysPath: join(dir, 'audit', 'keys.yaml') };
  await write(keys);
  return keys;
}
