import { hostname, userInfo } from 'node:os';
import { isProcessAlive } from '@baton/audit';
import { newRunId, resolveGitRevision, systemClock } from '@baton/core';
import { ConfigError } from '@baton/errors';
import { runShard } from '@baton/fleet';
import { clientsFromKubeConfig, clientsFromKubeconfigFile } from '@baton/kube';
import { createRunLog } from '@baton/progress';
import { Command } from '@commander-js/extra-typings';
import { KubeConfig } from '@kubernetes/client-node';

/** `baton fleet shard`: pod i of a wave's Indexed Job hands off target i (JOB_COMPLETION_INDEX). */
export function fleetShardCommand() {
  return new Command('shard')
    .description('run inside a wave Job’s pod: hand off the target at JOB_COMPLETION_INDEX (used by --engine job)')
    .requiredOption('--wave <configmap>', 'the wave’s ConfigMap (its targets)')
    .requiredOption('--namespace <ns>', 'namespace of the Job, its ConfigMaps and the target journals')
    .option('--kubeconfig <file>', 'the management cluster (default: the pod’s in-cluster identity)')
    .action(async (o) => {
      const index = Number(process.env.JOB_COMPLETION_INDEX);
      if (!Number.isInteger(index) || index < 0)
        throw new ConfigError('JOB_COMPLETION_INDEX is not set: baton fleet shard runs as a pod of an Indexed Job');
      const management = o.kubeconfig ? clientsFromKubeconfigFile(o.kubeconfig) : inCluster();
      // The shard's log is its pod log (JSON lines on stderr).
      const { log } = createRunLog({ verbose: true, file: '' });
      const ac = new AbortController();
      const onSignal = (sig: NodeJS.Signals) => ac.abort(new Error(`received ${sig}; revoking before exit`));
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
      let user = 'unknown';
      try {
        user = userInfo().username;
      } catch {}
      process.exitCode = await runShard({
        management,
        namespace: o.namespace,
        waveConfig: o.wave,
        index,
        clock: systemClock,
        log,
        deps: {
          actor: {
            user: `${user} (pod ${process.env.POD_NAME ?? hostname()})`,
            // The pod's name (the Job sets POD_NAME): its hostname is the same for every pod of an index.
            host: process.env.POD_NAME ?? hostname(),
            pid: process.pid,
            via: 'fleet',
          },
          newRunId: () => newRunId(),
          isPidAlive: isProcessAlive,
          resolveRevision: (source) => resolveGitRevision(source),
          signal: ac.signal,
        },
      });
    });
}

/** The pod's own ServiceAccount identity (its projected token and the cluster CA). */
function inCluster() {
  const kc = new KubeConfig();
  kc.loadFromCluster();
  return clientsFromKubeConfig(kc);
}
