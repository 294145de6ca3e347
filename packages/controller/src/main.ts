import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { isBatonError } from '@baton/errors';
import { KubeRestClient } from '@baton/kube/rest';
import { startController } from './controller.js';
import { createControllerLogger } from './logger.js';

// The controller's entry point: flags or environment, then run until SIGTERM/SIGINT.
// Exit codes: 0 stopped cleanly; 1 failed; 2 usage or config error.
const HELP = `usage: baton-controller [flags]
  --kubeconfig PATH     kubeconfig to use (default: in-cluster ServiceAccount, or $KUBECONFIG)
  --token-file PATH     bearer token file that overrides the kubeconfig user (re-read as it rotates)
  --namespace NS        namespace of the GitSync and Lease (default: $POD_NAMESPACE or baton-system)
  --gitsync NAME        GitSync to reconcile (default: baton-controller)
  --port N              health, metrics and webhook port (default: 8080)
  --identity NAME       Lease holder identity (default: $POD_NAME or hostname)
  --work-dir PATH       writable folder for the checkout (default: /tmp/baton-controller)
  --log-level LEVEL     pino level (default: info)`;

async function main(): Promise<number> {
  const env = process.env;
  let values: ReturnType<typeof parse>['values'];
  try {
    values = parse().values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${HELP}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const log = createControllerLogger({ level: values['log-level'] ?? env.LOG_LEVEL ?? 'info' });
  const identity = values.identity ?? env.POD_NAME ?? hostname();
  // The apiserver's audit log then tells replicas apart, though they share one ServiceAccount.
  const userAgent = `baton-controller (${identity})`;
  let kube: KubeRestClient;
  try {
    const kubeconfig = values.kubeconfig ?? env.KUBECONFIG;
    const tokenFile = values['token-file'] ?? env.BATON_TOKEN_FILE;
    kube = kubeconfig
      ? KubeRestClient.fromKubeconfig(kubeconfig, { ...(tokenFile ? { tokenFile } : {}), userAgent })
      : KubeRestClient.inCluster(env, undefined, userAgent);
  } catch (err) {
    log.error({ err: (err as Error).message }, 'configuration error');
    return 2;
  }
  const port = Number(values.port ?? env.BATON_PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    log.error({ port: values.port }, '--port must be an integer between 0 and 65535');
    return 2;
  }
  const controller = await startController({
    kube,
    log,
    namespace: values.namespace ?? env.POD_NAMESPACE ?? 'baton-system',
    gitSyncName: values.gitsync ?? env.BATON_GITSYNC ?? 'baton-controller',
    identity,
    workDir: values['work-dir'] ?? env.BATON_WORK_DIR ?? '/tmp/baton-controller',
    port,
  });
  log.info({ url: controller.url }, 'controller started');
  const onSignal = (signal: string) => {
    log.info({ signal }, 'shutdown requested');
    void controller.stop();
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  await controller.done;
  return 0;
}

function parse() {
  return parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      'token-file': { type: 'string' },
      namespace: { type: 'string' },
      gitsync: { type: 'string' },
      port: { type: 'string' },
      identity: { type: 'string' },
      'work-dir': { type: 'string' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(
      `baton-controller: ${isBatonError(err) ? err.message : String((err as Error).stack ?? err)}\n`,
    );
    process.exitCode = isBatonError(err) && err.code === 'config' ? 2 : 1;
  },
);
