// `npm run demo`: start a real local control plane, show its nodes through the baton CLI, stop it.
// `npm run demo -- --keep` leaves it running (stop it with `pnpm baton testenv down --name <name>`).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const keep = process.argv.includes('--keep');
const cli = fileURLToPath(new URL('../packages/cli/src/main.ts', import.meta.url));
const baton = (args: string[], capture = false) =>
  execFileSync(process.execPath, ['--conditions=@baton/source', '--import', 'tsx', cli, ...args], {
    stdio: capture ? ['ignore', 'pipe', 'inherit'] : 'inherit',
    encoding: 'utf8',
  });

const name = `demo-${process.pid}`;
process.stderr.write(`starting local cluster ${name} (kube-apiserver, etcd, controller-manager, scheduler, kwok)…\n`);
const t0 = performance.now();
const up = JSON.parse(baton(['testenv', 'up', '--name', name, '--nodes', '3', '--json'], true)) as {
  server: string;
  kubeconfigPath: string;
};
process.stdout.write(`cluster ${name} ready in ${((performance.now() - t0) / 1000).toFixed(1)} s at ${up.server}\n\n`);
try {
  baton(['testenv', 'nodes', '--name', name]);
} finally {
  if (keep)
    process.stdout.write(`\nkubeconfig: ${up.kubeconfigPath}\nstop it with: pnpm baton testenv down --name ${name}\n`);
  else baton(['testenv', 'down', '--name', name]);
}
