import { createHash } from 'node:crypto';
import { type DestinationStream, type Logger, pino } from 'pino';

/**
 * The redaction list of the controller's logger: the same paths as `REDACT_PATHS` of `@baton/core`
 * (`logger.test.ts` fails when they drift). The controller keeps a copy instead of importing core
 * at runtime because core loads the Kubernetes client, audit and kube packages (+70 MB RSS in the
 * controller process); see docs/adr/0006-controller-git-cli-rest-client-runtime-deps.md.
 */
export const CONTROLLER_REDACT_PATHS: readonly string[] = [
  'token',
  'password',
  'secret',
  'privateKey',
  'authorization',
  'bearerToken',
  'kubeconfig',
  'clientKeyData',
  'client-key-data',
  'headers.authorization',
  'headers.Authorization',
  '*.token',
  '*.password',
  '*.secret',
  '*.privateKey',
  '*.authorization',
  '*.bearerToken',
  '*.kubeconfig',
  '*.clientKeyData',
  '*.client-key-data',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.*.token',
  '*.*.password',
  '*.*.privateKey',
  '*.*.kubeconfig',
];

/** Options of {@link createControllerLogger}. */
export interface ControllerLoggerOptions {
  /** Minimum level. @default 'info' */
  readonly level?: string;
  /** Where JSON lines go. @default stdout */
  readonly destination?: DestinationStream;
}

/** The controller's JSON logger (stdout, redacted, ISO timestamps). */
export function createControllerLogger(options: ControllerLoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      redact: { paths: [...CONTROLLER_REDACT_PATHS], censor: '[redacted]' },
      base: null,
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

/** `sha256:` and 16 hex digits of a secret: safe to log (same as `fingerprint` of `@baton/core`). */
export function fingerprint(secret: string | Uint8Array): string {
  return `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
}
