import { readFileSync } from 'node:fs';

/** One event of the test bed apiserver's audit log (Metadata level, JSON lines). */
export interface ApiserverAuditEvent {
  readonly stage: string;
  readonly verb: string;
  readonly requestURI: string;
  readonly user: { readonly username?: string; readonly extra?: Record<string, string[]> };
  readonly objectRef?: {
    readonly resource?: string;
    readonly namespace?: string;
    readonly name?: string;
    readonly apiGroup?: string;
    readonly subresource?: string;
  };
  readonly responseStatus?: { readonly code?: number };
  readonly requestReceivedTimestamp: string;
  readonly stageTimestamp: string;
}

/** The completed requests (stage ResponseComplete) of the apiserver's audit log by `username`, in log order. */
export function apiserverRequestsBy(auditLogPath: string, username: string): ApiserverAuditEvent[] {
  return readFileSync(auditLogPath, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ApiserverAuditEvent)
    .filter((e) => e.stage === 'ResponseComplete' && e.user?.username === username);
}

/**
 * What one identity did, counted from the audit log: for a summary of what a credential was used for. A request the
 * apiserver could not authenticate (a revoked token) carries no username, so it is not counted here.
 */
export interface IdentityActivity {
  readonly requests: number;
  /**
   * Allowed creates, patches, updates and deletes that stored something (reviews are answered, not stored; dry runs,
   * e.g. baton's probes of its own confinement, store nothing).
   */
  readonly allowedWrites: number;
  /** Allowed dry-run writes (nothing stored). */
  readonly dryRuns: number;
  /** Requests the apiserver refused with 403 (RBAC or admission). */
  readonly denied: number;
  /** Allowed requests by verb and resource, e.g. `patch deployments`: count. */
  readonly allowedByVerb: Readonly<Record<string, number>>;
}

/** Counts {@link apiserverRequestsBy} for a summary. */
export function identityActivity(events: readonly ApiserverAuditEvent[]): IdentityActivity {
  const allowed = events.filter((e) => (e.responseStatus?.code ?? 0) < 300);
  const isReview = (e: ApiserverAuditEvent) => /reviews$/.test(e.objectRef?.resource ?? '');
  const isDryRun = (e: ApiserverAuditEvent) => /[?&]dryRun=/.test(e.requestURI);
  const writes = allowed.filter((e) => ['create', 'patch', 'update', 'delete'].includes(e.verb) && !isReview(e));
  const allowedByVerb: Record<string, number> = {};
  for (const e of allowed) {
    const k = `${e.verb} ${e.objectRef?.resource ?? e.requestURI}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}${isDryRun(e) ? ' (dry run)' : ''}`;
    allowedByVerb[k] = (allowedByVerb[k] ?? 0) + 1;
  }
  return {
    requests: events.length,
    allowedWrites: writes.filter((e) => !isDryRun(e)).length,
    dryRuns: writes.filter(isDryRun).length,
    denied: events.filter((e) => e.responseStatus?.code === 403).length,
    allowedByVerb,
  };
}
