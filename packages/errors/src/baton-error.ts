/** Stable, machine-readable error codes. A caller branches on `code`, a human reads `message`. */
export const ErrorCode = {
  config: 'config',
  kubeApi: 'kube-api',
  timeout: 'timeout',
  revocation: 'revocation',
  confinement: 'confinement',
  tampered: 'tampered',
  auditVerify: 'audit-verify',
  imageVerify: 'image-verify',
  process: 'process',
  build: 'build',
  internal: 'internal',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Options every baton error accepts. `details` must never hold a secret. */
export interface BatonErrorOptions {
  /** The error that caused this one (ES2022 `cause`). */
  readonly cause?: unknown;
  /** Structured, secret-free context for logs and `--json` output. */
  readonly details?: Record<string, unknown>;
}

/**
 * Base class of every error baton throws on purpose. The message says what failed,
 * which object, what was expected and what to do.
 */
export class BatonError extends Error {
  /** Stable code for programmatic handling. */
  readonly code: ErrorCode;
  /** Secret-free structured context. */
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: BatonErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details;
  }
}

/** Bad user input: a plan, flag, file or manifest that breaks a rule. CLI exit code 2. */
export class ConfigError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.config, message, options);
  }
}

/** A Kubernetes API call failed; `details.status` carries the HTTP status when known. */
export class KubeApiError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.kubeApi, message, options);
  }
}

/** Something did not become ready (or did not finish) before its deadline. */
export class TimeoutError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.timeout, message, options);
  }
}

/**
 * The post-close check found pushed objects that differ from the plan: someone holding the bootstrap credential wrote
 * them during the push window. The run branches on it: it repairs them under a fresh confined credential, or stops
 * the workloads. `details.objects` names each object and its fields, never a value.
 */
export class TamperingError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.tampered, message, options);
  }
}

/**
 * The bootstrap identity could not be confined to the plan at admission (the policy could not be installed, or a
 * probe write outside the plan was not denied): the run fails closed, pushing nothing.
 */
export class ConfinementError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.confinement, message, options);
  }
}

/** An audit log, checkpoint or proof failed verification. */
export class AuditVerifyError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.auditVerify, message, options);
  }
}

/**
 * An image the push would install is not signed by a key its trust policy names, or its signatures could not be read:
 * the run is refused before anything is minted. `details.image` names the image.
 */
export class ImageVerifyError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.imageVerify, message, options);
  }
}

/** A child process (a control-plane binary, git, pulumi, go) failed to start or exited early. */
export class ProcessError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.process, message, options);
  }
}

/** Building a pinned binary from Go modules failed. */
export class BuildError extends BatonError {
  constructor(message: string, options: BatonErrorOptions = {}) {
    super(ErrorCode.build, message, options);
  }
}

/** True when `err` is a baton error (also across duplicated module instances). */
export function isBatonError(err: unknown): err is BatonError {
  return (
    err instanceof BatonError ||
    (err instanceof Error && typeof (err as { code?: unknown }).code === 'string' && 'details' in err)
  );
}
