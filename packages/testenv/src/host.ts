// The background host of a cluster started by `baton testenv up`: it owns the components (so the
// watchdog reaps them if this process is killed), prints one JSON line when ready, and stops the
// cluster on SIGTERM/SIGINT. With `--bed=<profile>` it also owns a handoff bed for that cluster (a Git server, what
// runs the controller's Pods, a ready plan), so `baton up` can be run by hand against it.
// Not part of the public API; started by startDetachedCluster().
import { readFile } from 'node:fs/promises';
import { writeSigningKeyPair } from '@baton/audit';
import { parse } from 'yaml';
import { startCluster } from './cluster.js';
import { startFluxBed } from './flux/flux-side.js';
import { startHandoffBed } from './handoff-bed.js';

const args = new Map<string, string>();
for (const a of process.argv.slice(2)) {
  const [k, v] = a.replace(/^--/, '').split('=', 2) as [string, string | undefined];
  args.set(k, v ?? 'true');
}

/** What the first line says about a cluster: its coordinates, and the bed's when there is one. */
async function start(): Promise<{ report: Record<string, unknown>; stop: () => Promise<void> }> {
  const nodes = Number.parseInt(args.get('nodes') ?? '1', 10);
  const name = args.get('name');
  const kubernetesVersion = args.get('kubernetes-version');
  const keep = args.get('keep') === 'true';
  const bed = args.get('bed');
  // A real node unless asked otherwise.
  const node = (args.get('node') ?? 'real') as 'real' | 'kwok';
  const common = { ...(name ? { name } : {}), ...(kubernetesVersion ? { kubernetesVersion } : {}), nodes, node };
  if (!bed) {
    const cluster = await startCluster({ ...common, keep });
    const { server, kubeconfigPath, auditLogPath } = cluster;
    const realNode = cluster.realNode?.coordinates;
    return {
      report: { name: cluster.name, server, kubeconfigPath, auditLogPath, ...(realNode ? { realNode } : {}) },
      stop: () => cluster.stop(),
    };
  }
  const bedOptions = {
    ...common,
    profileDir: args.get('manifests') ?? '',
    writeAuditKeys: (paths: { signingKeyPath: string; keysPath: string }) => writeSigningKeyPair(paths),
  };
  const b = bed === 'flux' ? await startFluxBed(bedOptions) : await startHandoffBed(bedOptions);
  const s = b.side;
  const plan = parse(await readFile(s.planPath, 'utf8')) as { pull: { source: { url: string } } };
  return {
    report: {
      name: b.clusterName,
      server: b.server,
      kubeconfigPath: b.kubeconfigPath,
      auditLogPath: b.apiserverAuditLogPath,
      bed: {
        profile: bed,
        dir: s.dir,
        planPath: s.planPath,
        gitUrl: plan.pull.source.url,
        gitPath: s.gitPath,
        revision: s.revision,
        pushDir: s.pushDir,
        pullCredentialPath: s.pullCredentialPath,
        auditLogPath: s.auditLogPath,
        signingKeyPath: s.signingKeyPath,
        keysPath: s.keysPath,
        controllerImage: 'controllerImage' in s ? s.controllerImage : null,
      },
    },
    stop: () => b.stop({ keepFiles: keep }),
  };
}

try {
  const { report, stop: stopAll } = await start();
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await stopAll();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('SIGHUP', () => {});
  // Keeps the event loop alive until a signal arrives.
  setInterval(() => {}, 1 << 30);
  process.stdout.write(`${JSON.stringify({ ok: true, ...report })}\n`);
} catch (err) {
  const e = err as Error & { code?: string };
  process.stdout.write(`${JSON.stringify({ ok: false, code: e.code ?? 'internal', message: e.message })}\n`);
  process.exit(1);
}
