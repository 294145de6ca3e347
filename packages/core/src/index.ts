export type { CreateLoggerOptions, Logger } from './logger.js';
export { createLogger, fingerprint, REDACT_PATHS, silentLogger } from './logger.js';
