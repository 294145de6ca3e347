export type { BatonErrorOptions } from './baton-error.js';
export {
  AuditVerifyError,
  BatonError,
  BuildError,
  ConfigError,
  ConfinementError,
  ErrorCode,
  ImageVerifyError,
  isBatonError,
  KubeApiError,
  ProcessError,
  TamperingError,
  TimeoutError,
} from './baton-error.js';
