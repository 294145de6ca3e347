import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, isBatonError } from '@baton/errors';
import { KubeRestClient } from '@baton/kube/rest';
import { OUTPUT_FORMATS, renderRows, screenOf } from '@baton/terminal';
import { Command, CommanderError, Option } from '@commander-js/extra-typings';
import { parse as parseYaml } from 'yaml';
import { ensureArgoCd } from '../argocd/argocd-build.js';
import {
  CONTROL_PLANE_VERSIONS,
  ensureControlPlaneBinaries,
  KUBERNETES_VERSIONS,
  resolveKubernetesVersion,
} from '../control-plane-binaries.js';
import { type DetachedBed, type DetachedCluster, startDetachedCluster } from '../detached.js';
import { ensureFluxControllers, FLUX_VERSIONS } from '../flux/flux-controllers.js';
import { COREDNS_VERSION, ensureNodeBinaries, nodeVersionFor } from '../node/node-binaries.js';
import { ensurePulumiEngine, PULUMI_VERSIONS } from '../pulumi/engine.js';
import { listClusters, stopClusterByName } from '../recorded-clusters.js';
import { clusterColumns, nodeColumns } from './columns.js';

const KUBERNETES_VERSION_HELP = `Kubernetes version of the control plane: ${KUBERNETES_VERSIONS.map((v) => v.slice(1)).join(', ')} (default ${CONTROL_PLANE_VERSIONS.kubernetes.slice(1)}, or $BATON_KUBERNETES_VERSION)`;

const err = (line: string) => process.stderr.write(`${line}\n`);

function intOption(flag: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0)
      throw new ConfigError(`${flag} ${v} is invalid: use a whole number of 0 or more`);
    return n;
  };
}

/**
 * `baton testenv …`: real local control planes for tests, benchmarks and the demo. The one definition of the noun:
 * `@baton/cli` loads it when `@baton/testenv` is installed, and this package's `baton-testenv` bin runs it alone.
 */
export function testenvCommand(): Command {
  const cmd = new Command('testenv').description(
    'start, list and stop real local Kubernetes control planes (built from Go modules)',
  );

  cmd.addCommand(upCommand());

  cmd
    .command('ls')
    .description('list local clusters')
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table' as const))
    .action(async (o) => {
      const rows = (await listClusters()).map((c) => ({
        name: c.name,
        status: c.isRunning ? ('running' as const) : ('stopped' as const),
        server: c.server,
        kubeconfigPath: c.kubeconfigPath,
        auditLogPath: c.auditLogPath,
        startedAt: c.startedAt,
      }));
      const now = Date.now();
      process.stdout.write(renderRows(rows, o.output, clusterColumns(now), screenOf()));
    });

  cmd
    .command('nodes')
    .description("show a cluster's nodes and whether they are Ready")
    .requiredOption('--name <name>', 'cluster name')
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table' as const))
    .action(async (o) => {
      const c = (await listClusters()).find((x) => x.name === o.name);
      if (!c?.isRunning)
        throw new ConfigError(
          `no running cluster named "${o.name}"; \`baton testenv ls\` lists them, \`baton testenv up\` starts one`,
        );
      const http = await adminClient(c.kubeconfigPath);
      try {
        const res = await http.raw('GET', '/api/v1/nodes');
        if (res.status !== 200) throw new ConfigError(`listing nodes of "${o.name}" failed with HTTP ${res.status}`);
        const items = (res.body as { items: NodeLike[] }).items;
        const rows = items.map((n) => ({
          name: n.metadata.name,
          ready: n.status?.conditions?.find((x) => x.type === 'Ready')?.status ?? 'Unknown',
          kubelet: n.status?.nodeInfo?.kubeletVersion ?? '',
          created: n.metadata.creationTimestamp,
        }));
        const now = Date.now();
        process.stdout.write(renderRows(rows, o.output, nodeColumns(now), screenOf()));
      } finally {
        http.close();
      }
    });

  cmd
    .command('down')
    .description('stop a cluster (or all) and remove its data')
    .option('--name <name>', 'cluster name')
    .option('--all', 'stop every local cluster', false)
    .action(async (o) => {
      if (!o.name && !o.all) throw new ConfigError('baton testenv down needs --name <name> or --all');
      const names = o.all ? (await listClusters()).map((c) => c.name) : [o.name!];
      for (const n of names) {
        await stopClusterByName(n);
        err(`stopped ${n}`);
      }
    });

  cmd
    .command('build')
    .description('build (or verify the cache of) the pinned control-plane binaries and the Pulumi engine')
    .option('--force', 'rebuild even when cached', false)
    .option('--no-pulumi', 'skip the Pulumi engine (CLI and Kubernetes provider)')
    .option('--no-node', "skip the real node's kubelet, kube-proxy, CoreDNS and pause (beds then run kwok nodes only)")
    .option(
      '--flux',
      "also build Flux's source-controller and kustomize-controller (minutes and 1.6 GB when cold) and write their CRDs to bootstrap-manifests/flux",
      false,
    )
    .option(
      '--argocd',
      'also build Argo CD v3.6.1 (with GOTOOLCHAIN=go1.27.3 for that build only; 7 to 12 minutes and 1.7 GB when cold) and write its Application and AppProject CRDs to bootstrap-manifests/argocd',
      false,
    )
    .option('--kubernetes-version <version>', KUBERNETES_VERSION_HELP)
    .option('--json', 'print what was built as JSON', false)
    .action(async (o) => {
      const { versions, builds, paths } = await buildPinned(o);
      if (o.json) process.stdout.write(`${JSON.stringify({ versions, builds, ...paths }, null, 2)}\n`);
      else
        for (const b of builds)
          process.stdout.write(
            `${b.name}: ${b.built ? 'built' : 'cached'} ${JSON.stringify(b.versions)} ${JSON.stringify(b.sizesMB)} MB\n`,
          );
    });

  return cmd;
}

/** Builds (or reuses) what `testenv build` was asked for, and describes each build for the terminal or JSON. */
async function buildPinned(o: {
  readonly force: boolean;
  readonly pulumi: boolean;
  readonly node: boolean;
  readonly flux: boolean;
  readonly argocd: boolean;
  readonly kubernetesVersion?: string | undefined;
}) {
  const kubernetesVersion = resolveKubernetesVersion(o.kubernetesVersion);
  // One build at a time. Two lanes of builds side by side were slower on 2 cores (measured once, 2026-12-06, cold): the
  // seven builds before Flux and Argo CD took 2,421 s against 1,969 s one after another, and 7.7% more CPU time.
  const bins = await ensureControlPlaneBinaries({ force: o.force, kubernetesVersion, onProgress: err });
  const node =
    o.node && nodeVersionFor(kubernetesVersion)
      ? await ensureNodeBinaries({ kubernetesVersion, onProgress: err, force: o.force })
      : undefined;
  const engine = o.pulumi ? await ensurePulumiEngine({ force: o.force, onProgress: err }) : undefined;
  const flux = o.flux ? await ensureFluxControllers({ force: o.force, onProgress: err }) : undefined;
  const argocd = o.argocd ? await ensureArgoCd({ force: o.force, onProgress: err }) : undefined;
  const builds = [
    ...bins.builds,
    ...(node?.builds ?? []),
    ...(engine?.builds ?? []),
    ...(flux?.builds ?? []),
    ...(argocd ? [argocd.build] : []),
  ].map((b) => ({
    name: b.name,
    built: b.built,
    buildSeconds: b.buildSeconds,
    buildPeakRssMB: b.buildPeakRssMB,
    versions: b.versions,
    sizesMB: Object.fromEntries(Object.entries(b.sizes).map(([k, v]) => [k, Math.round(v / 1e5) / 10])),
    dir: b.dir,
  }));
  return {
    versions: {
      ...CONTROL_PLANE_VERSIONS,
      kubernetes: kubernetesVersion,
      ...(node ? { coredns: COREDNS_VERSION } : {}),
      ...(engine ? PULUMI_VERSIONS : {}),
      ...(flux ? FLUX_VERSIONS : {}),
      ...(argocd ? { argocd: argocd.version } : {}),
    },
    builds,
    paths: {
      ...(flux ? { fluxCrdsPath: flux.crdsPath } : {}),
      ...(argocd ? { argocdCrdsPath: argocd.crdsPath, argocdRestOfInstallPath: argocd.restPath } : {}),
    },
  };
}

interface NodeLike {
  metadata: { name: string; creationTimestamp?: string };
  status?: { conditions?: { type: string; status: string }[]; nodeInfo?: { kubeletVersion?: string } };
}

/**
 * Runs `baton-testenv <verb> …` (the noun as a program of its own) and resolves to the exit code, as `baton` maps
 * them: 0 ok, 1 failed, 2 usage or config error. Only entry points map errors to exit codes.
 */
export async function runTestenvCli(argv: readonly string[]): Promise<number> {
  const program = testenvCommand().name('baton-testenv').showHelpAfterError().exitOverride();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    // --help "fails" with exit code 0.
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    process.stderr.write(`baton-testenv: ${err instanceof Error ? err.message : String(err)}\n`);
    return isBatonError(err) && err.code === 'config' ? 2 : 1;
  }
}

/** `testenv up`: a cluster in a background host, and with `--bed` a handoff bed for it. */
function upCommand() {
  return new Command('up')
    .description('start a cluster that keeps running in the background')
    .option('--name <name>', 'cluster name (lowercase letters, digits, -)')
    .option('--nodes <count>', 'number of kwok fake nodes (with --node kwok)', intOption('--nodes'), 1)
    .addOption(
      new Option(
        '--node <kind>',
        'real: one real node (kubelet, containerd, kube-proxy, CoreDNS) with the whole cluster in a network namespace of its own, reached at the node address; kwok: fake nodes on loopback, no Pod ever runs (default: real where the bed builds kubelet for the version, 1.36.3; else kwok)',
      ).choices(['real', 'kwok'] as const),
    )
    .option(
      '--keep',
      'keep the data directory after `down` (`testenv ls` shows it stopped; remove it with rm -r)',
      false,
    )
    .option('--kubernetes-version <version>', KUBERNETES_VERSION_HELP)
    .addOption(
      new Option(
        '--bed <profile>',
        "also run a handoff bed until `down`: a Git server holding the push set, the controllers' images in the bed's registry, and a plan that hands off as it stands",
      ).choices(['baton-controller', 'flux'] as const),
    )
    .option('--manifests <dir>', "the bed's bootstrap manifests (default: bootstrap-manifests/<profile> here)")
    .option('--json', 'print one JSON object: name, server, kubeconfigPath, auditLogPath (and bed)', false)
    .action(async (o) => {
      const kubernetesVersion = resolveKubernetesVersion(o.kubernetesVersion);
      const bed = o.bed ? { profile: o.bed, manifests: bedManifests(o.bed, o.manifests) } : undefined;
      if (!bed && o.manifests) throw new ConfigError('--manifests is an option of --bed: add --bed <profile>');
      const node = o.node ?? 'real';
      if (bed && node === 'kwok')
        throw new ConfigError(
          `--bed ${bed.profile} needs a real node (its controller runs as a Pod that kubelet starts): drop --node kwok`,
        );
      const progress = o.json ? () => {} : err;
      if (!o.json)
        err(
          `building or reusing the control-plane binaries (Kubernetes ${kubernetesVersion}), then starting the cluster${bed ? ` and its ${bed.profile} bed` : ''}…`,
        );
      await ensureUpBinaries(kubernetesVersion, node, bed?.profile, progress);
      const c = await startDetachedCluster({
        ...(o.name ? { name: o.name } : {}),
        nodes: o.nodes,
        node,
        keep: o.keep,
        kubernetesVersion,
        ...(bed ? { bed } : {}),
      });
      const out = {
        name: c.name,
        server: c.server,
        kubeconfigPath: c.kubeconfigPath,
        auditLogPath: c.auditLogPath,
        ...(c.bed ? { bed: c.bed } : {}),
      };
      if (o.json) process.stdout.write(`${JSON.stringify(out)}\n`);
      else process.stdout.write(describeUp(c));
    });
}

/** Builds what `up` runs here, where the progress shows: the background host's output goes nowhere. */
async function ensureUpBinaries(
  kubernetesVersion: string,
  node: 'real' | 'kwok',
  profile: string | undefined,
  progress: (line: string) => void,
): Promise<void> {
  await ensureControlPlaneBinaries({ kubernetesVersion, onProgress: progress });
  if (node === 'real') await ensureNodeBinaries({ kubernetesVersion, onProgress: progress });
  if (profile === 'flux') await ensureFluxControllers({ onProgress: progress });
}

/** The bootstrap manifests of a bed: `--manifests`, else bootstrap-manifests/<profile> under the current directory. */
function bedManifests(profile: string, manifests: string | undefined): string {
  const dir = resolve(manifests ?? join('bootstrap-manifests', profile));
  if (!existsSync(join(dir, 'rules', 'profile.yaml')))
    throw new ConfigError(
      `--manifests ${dir} is not a ${profile} profile (it has no rules/profile.yaml): run from the repository root, or pass --manifests <bootstrap-manifests/${profile}>`,
    );
  return dir;
}

/** What `testenv up` prints: the cluster, and the bed's files with the commands that follow the handoff by hand. */
function describeUp(c: DetachedCluster): string {
  const lines = [
    `cluster ${c.name} is running at ${c.server}`,
    `  kubeconfig: ${c.kubeconfigPath}`,
    `  audit log:  ${c.auditLogPath ?? '(off)'}`,
  ];
  const b: DetachedBed | undefined = c.bed;
  if (b)
    lines.push(
      `handoff bed (${b.profile}) in ${b.dir}:`,
      `  plan:            ${b.planPath} (hands the cluster off as it stands)`,
      `  Git:             ${b.gitUrl} (path ${b.gitPath}, revision ${b.revision})`,
      `  push set:        ${b.pushDir}`,
      `  pull credential: ${b.pullCredentialPath}`,
      ...(b.controllerImage ? [`  controller:      ${b.controllerImage}`] : []),
      `  audit log:       ${b.auditLogPath} (keys ${b.keysPath})`,
      'follow the handoff by hand:',
      `  pnpm baton plan --plan ${b.planPath} --kubeconfig ${c.kubeconfigPath}`,
      `  pnpm baton up --plan ${b.planPath}`,
      `  pnpm baton status --plan ${b.planPath}`,
      `  pnpm baton audit verify ${b.auditLogPath} --keys ${b.keysPath}`,
    );
  lines.push(`stop it with: pnpm baton testenv down --name ${c.name}`);
  return `${lines.join('\n')}\n`;
}

/** A client for the first cluster and user of a client-certificate kubeconfig, as the bed writes its admin's. */
async function adminClient(path: string): Promise<KubeRestClient> {
  const kc = parseYaml(await readFile(path, 'utf8')) as {
    clusters: { cluster: Record<string, string> }[];
    users: { user: Record<string, string> }[];
  };
  const b64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');
  return new KubeRestClient({
    server: kc.clusters[0]?.cluster.server ?? '',
    caPem: b64(kc.clusters[0]?.cluster['certificate-authority-data']),
    certPem: b64(kc.users[0]?.user['client-certificate-data']),
    keyPem: b64(kc.users[0]?.user['client-key-data']),
  });
}
