// A cluster's data directory: claimed under a lock by one starter, then filled with its certificates, kubeconfigs and
// audit policy on fresh ports; state.json records what runs there, for `baton testenv ls/down` and the watchdog.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isProcessAlive, isSameProcess } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { auditPolicyPath, type ClusterLayout, type ClusterPorts } from './component-args.js';
import { withFileLock } from './file-lock.js';
import { kubeconfigYaml } from './kubeconfig.js';
import type { BedNetwork } from './node/bed-network.js';
import { cacheRoot } from './paths.js';
import type { CertKeyPair, ClusterPki } from './pki.js';
import { freePorts } from './ports.js';

/** What `state.json` in a cluster directory records, for `baton testenv ls/down` and the watchdog. */
export interface ClusterState {
  readonly name: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly auditLogPath: string | null;
  readonly dir: string;
  readonly ownerPid: number | null;
  readonly hostPid: number;
  /** The host's start time (`processStartTime`), so a later `down` never signals a process that reused its pid. */
  readonly hostStart?: string;
  readonly keep: boolean;
  readonly startedAt: string;
  readonly pids: Record<string, number>;
  /** Each recorded process's start time, by the same names as `pids` (absent in states written before it). */
  readonly starts?: Record<string, string>;
  readonly versions: Record<string, string>;
  /** The bed's network namespace, when the cluster has a real node. */
  readonly netns?: string;
}

/** Where a cluster's components run when not on loopback: a bed's namespace, bound to its node address. */
export type ComponentNetwork = Pick<BedNetwork, 'nodeIp' | 'wrap'>;

/** Default parent of cluster data directories. */
export function clustersDir(): string {
  return join(cacheRoot(), 'testenv', 'clusters');
}

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
`;

/** Names the process that is starting a cluster, until its state.json exists. */
const CLAIM_FILE = 'starting.pid';

/**
 * Checks that no live process holds the name and claims an empty directory for this one, under a lock: two
 * processes starting the same name at once would otherwise both wipe the directory and overwrite each other's
 * PKI. The claim covers the seconds before state.json exists.
 * @throws ConfigError when the name is in use.
 */
export async function claimClusterDir(base: string, name: string): Promise<void> {
  const dir = join(base, name);
  await mkdir(base, { recursive: true });
  await withFileLock(join(base, `.${name}.lock`), async () => {
    const holder = await describeHolder(dir);
    if (holder) {
      throw new ConfigError(
        `a cluster named "${name}" is already running (${holder}); choose another --name or stop it with \`baton testenv down --name ${name}\``,
      );
    }
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, CLAIM_FILE), String(process.pid));
  });
}

/** Who holds a cluster directory: a live host, a live starter other than us, or nobody (undefined). */
async function describeHolder(dir: string): Promise<string | undefined> {
  const prev = await readState(dir);
  if (prev && isSameProcess(prev.hostPid, prev.hostStart)) return `pid ${prev.hostPid}, ${prev.server}`;
  const claim = Number.parseInt(await readFile(join(dir, CLAIM_FILE), 'utf8').catch(() => ''), 10);
  if (Number.isFinite(claim) && claim !== process.pid && isProcessAlive(claim)) return `being started by pid ${claim}`;
  return undefined;
}

/** Writes certificates, kubeconfigs and the audit policy into a claimed directory, on fresh ports. */
export async function prepareClusterDir(
  dir: string,
  name: string,
  pki: ClusterPki,
  auditLog: boolean,
  net: ComponentNetwork | null,
  realNode: boolean,
): Promise<ClusterLayout> {
  const pkiDir = join(dir, 'pki');
  const logDir = join(dir, 'logs');
  await mkdir(pkiDir, { recursive: true });
  await mkdir(logDir, { recursive: true });
  await writeCertificates(pkiDir, pki);
  const ports = await allocatePorts();
  const host = net?.nodeIp ?? '127.0.0.1';
  const layout: ClusterLayout = {
    name,
    dir,
    pkiDir,
    logDir,
    ports,
    host,
    realNode,
    server: `https://${host}:${ports.apiserver}`,
    kubeconfigs: {
      admin: join(dir, 'kubeconfig'),
      controllerManager: join(dir, 'controller-manager.kubeconfig'),
      scheduler: join(dir, 'scheduler.kubeconfig'),
      kwok: join(dir, 'kwok.kubeconfig'),
    },
    auditLogPath: auditLog ? join(dir, 'audit.log') : null,
  };
  await writeKubeconfigs(layout, pki);
  if (layout.auditLogPath) await writeFile(auditPolicyPath(layout), AUDIT_POLICY);
  return layout;
}

async function writeCertificates(pkiDir: string, pki: ClusterPki): Promise<void> {
  const files: Record<string, string> = {
    'ca.crt': pki.ca.certPem,
    'ca.key': pki.ca.keyPem,
    'apiserver.crt': pki.apiserver.certPem,
    'apiserver.key': pki.apiserver.keyPem,
    'apiserver-kubelet-client.crt': pki.apiserverKubeletClient.certPem,
    'apiserver-kubelet-client.key': pki.apiserverKubeletClient.keyPem,
    'sa.key': pki.serviceAccount.privateKeyPem,
    'sa.pub': pki.serviceAccount.publicKeyPem,
  };
  for (const [f, content] of Object.entries(files)) await writeFile(join(pkiDir, f), content, { mode: 0o600 });
}

async function allocatePorts(): Promise<ClusterPorts> {
  const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok] = (await freePorts(6)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok };
}

/** One kubeconfig per client identity, each with its own client certificate. */
async function writeKubeconfigs(layout: ClusterLayout, pki: ClusterPki): Promise<void> {
  const { name, server, kubeconfigs } = layout;
  const write = (path: string, pair: CertKeyPair) =>
    writeFile(path, kubeconfigYaml({ name, server, caPem: pki.ca.certPem, ...pair }), { mode: 0o600 });
  await write(kubeconfigs.admin, pki.admin);
  await write(kubeconfigs.controllerManager, pki.controllerManager);
  await write(kubeconfigs.scheduler, pki.scheduler);
  await write(kubeconfigs.kwok, pki.kwok);
}

/** A cluster directory's state.json, or undefined when it has none (yet). */
export async function readState(dir: string): Promise<ClusterState | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}
