import { createHash } from 'node:crypto';
import { type DestinationStream, type Logger, pino } from 'pino';

/**
 * Every path that could carry a secret, at any depth pino can express. One list for every logger
 * baton creates; `logger.test.ts` proves a minted token never reaches the output.
 */
export const REDACT_PATHS: readonly string[] = [
  'token',
  'password',
  'secret',
  'privateKey',
  'authorization',
  'bearerToken',
  'kubeconfig',
  'kubeconfigContent',
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
  '*.kubeconfigContent',
  '*.clientKeyData',
  '*.client-key-data',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.*.token',
  '*.*.password',
  '*.*.privateKey',
  '*.*.kubeconfig',
  '*.*.kubeconfigContent',
];

/** Options of {@link createLogger}. */
export interface CreateLoggerOptions {
  /** Minimum level. @default 'info' */
  readonly level?: pino.LevelWithSilent;
  /** Where JSON lines go. @default process.stderr */
  readonly destination?: DestinationStream;
  /** Human-readable output (for a terminal). @default false */
  readonly pretty?: boolean;
  /** Fields bound to every line, e.g. `{ runId }`. */
  readonly base?: Record<string, unknown>;
}

/** Creates a pino logger with baton's redaction list. Loggers are passed in, never imported as singletons. */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const opts: pino.LoggerOptions = {
    level: options.level ?? 'info',
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    base: options.base ?? null,
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (options.pretty) {
    return pino({
      ...opts,
      transport: { target: 'pino-pretty', options: { destination: 2, colorize: true, ignore: 'pid,hostname' } },
    });
  }
  return pino(opts, options.destination ?? pino.destination({ dest: 2, sync: true }));
}

/** A logger that drops everything: the default where a caller passes none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * A short, stable, non-reversible name for a secret, safe to log and to record in audit events:
 * `sha256:` and the first 16 hex digits of SHA-256 over the secret.
 */
export function fingerprint(secret: string | Uint8Array): string {
  return `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
}

export type { Logger } from 'pino';
