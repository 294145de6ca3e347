// `baton fleet shard` for the Job engine tests, with one addition: it stops dead at a step of one cluster the first
// time it gets there, so a test can kill -9 the shard's pod process exactly there (the Job then retries the index).
// Usage (as the pod runner's command): node --conditions=@baton/source --import tsx held-shard.ts <hold.json> \
//   fleet shard --wave W --namespace NS --kubeconfig K
// <hold.json>: {"cluster": "x", "step": "push", "marker": "/tmp/held"}; the marker file gets the pid once held.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { createLogger, systemClock } from '@baton/core';
import { runShard } from '@baton/fleet';
import { clientsFromKubeconfigFile } from '@baton/kube';

const [holdFile = '', ...rest] = process.argv.slice(2);
const arg = (name: string) => {
  const i = rest.findIndex((a) => a === name || a.startsWith(`${name}=`));
  const a = rest[i] ?? '';
  return a.includes('=') ? a.slice(a.indexOf('=') + 1) : (rest[i + 1] ?? '');
};
const hold = JSON.parse(readFileSync(holdFile, 'utf8')) as { cluster: string; step: string; marker: string };
let seq = 0;
process.exitCode = await runShard({
  management: clientsFromKubeconfigFile(arg('--kubeconfig')),
  namespace: arg('--namespace'),
  waveConfig: arg('--wave'),
  index: Number(process.env.JOB_COMPLETION_INDEX),
  clock: systemClock,
  log: createLogger(),
  deps: {
    actor: { user: 'test', host: hostname(), pid: process.pid, via: 'fleet' },
    newRunId: () => `shard-${process.pid}-${seq++}`,
    isPidAlive: (pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    },
    resolveRevision: async () => {
      throw new Error('tests pin pull.source.revision');
    },
  },
  onStep: async (step, cluster) => {
    if (cluster !== hold.cluster || step !== hold.step || existsSync(hold.marker)) return;
    writeFileSync(hold.marker, String(process.pid));
    // A pending promise alone does not keep Node alive; the interval does, until the test's SIGKILL.
    setInterval(() => {}, 60_000);
    await new Promise(() => {});
  },
});
