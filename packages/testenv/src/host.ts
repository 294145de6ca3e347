// The background host of a cluster started by `baton testenv up`: it owns the components (so the
// watchdog reaps them if this process is killed), prints one JSON line when ready, and stops the
// cluster on SIGTERM/SIGINT. Not part of the public API; started by startDetachedCluster().
import { startCluster } from './cluster.js';

const args = new Map<string, string>();
for (const a of process.argv.slice(2)) {
  const [k, v] = a.replace(/^--/, '').split('=', 2) as [string, string | undefined];
  args.set(k, v ?? 'true');
}

try {
  const nodes = Number.parseInt(args.get('nodes') ?? '1', 10);
  const name = args.get('name');
  const kubernetesVersion = args.get('kubernetes-version');
  const cluster = await startCluster({
    ...(name ? { name } : {}),
    ...(kubernetesVersion ? { kubernetesVersion } : {}),
    nodes,
    keep: args.get('keep') === 'true',
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await cluster.stop();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('SIGHUP', () => {});
  // Keeps the event loop alive until a signal arrives.
  setInterval(() => {}, 1 << 30);
  process.stdout.write(
    `${JSON.stringify({ ok: true, name: cluster.name, server: cluster.server, kubeconfigPath: cluster.kubeconfigPath, auditLogPath: cluster.auditLogPath })}\n`,
  );
} catch (err) {
  const e = err as Error & { code?: string };
  process.stdout.write(`${JSON.stringify({ ok: false, code: e.code ?? 'internal', message: e.message })}\n`);
  process.exit(1);
}
