import { createLogger, fingerprint } from '@baton/core/logger';
import { type DestinationStream, type Logger, pino } from 'pino';

// Only core's logger module, not its index: the index loads the Kubernetes client, audit and kube packages
// (+70 MB RSS in the controller process; docs/adr/0006-controller-git-cli-rest-client-runtime-deps.md).
export { fingerprint };

/** Options of {@link createControllerLogger}. */
export interface ControllerLoggerOptions {
  /** Minimum level. @default 'info' */
  readonly level?: string;
  /** Where JSON lines go. @default stdout */
  readonly destination?: DestinationStream;
}

/** The controller's JSON logger: core's redaction list, JSON lines on stdout as a pod's logs should be. */
export function createControllerLogger(options: ControllerLoggerOptions = {}): Logger {
  return createLogger({
    level: (options.level ?? 'info') as pino.LevelWithSilent,
    destination: options.destination ?? pino.destination({ dest: 1, sync: true }),
  });
}
