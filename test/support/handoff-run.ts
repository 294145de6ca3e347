import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import { createHandoffDeps, createLogger, type HandoffDeps, type LoadedPlan } from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';

/** Log lines captured from a handoff, to assert that no token reaches them. */
export interface CapturedLog {
  readonly lines: string[];
  text(): string;
}

/** A logger that keeps every JSON line in memory. */
export function capturingLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  return {
    log: createLogger({ level: 'debug', destination }),
    captured: { lines, text: () => lines.join('\n') } as CapturedLog,
  };
}

let seq = 0;

/** Real collaborators for an in-process handoff against a test cluster (core's factory, with a capturing logger). */
export function testHandoffDeps(loaded: LoadedPlan, kubeconfigPath: string, extra: Partial<HandoffDeps> = {}) {
  const { log, captured } = capturingLogger();
  const deps = createHandoffDeps(loaded, clientsFromKubeconfigFile(kubeconfigPath), {
    overrides: {
      log,
      actor: { user: 'test', host: hostname(), pid: process.pid, via: 'cli' },
      newRunId: () => `t${process.pid}-${Date.now().toString(36)}-${seq++}`,
      resolveRevision: async () => {
        throw new Error('tests pin pull.source.revision');
      },
      ...extra,
    },
  });
  return { deps, captured };
}

/** Any string shaped like a JWT (every ServiceAccount token is one). */
export const JWT_PATTERN = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/;

/** One apiserver audit event (Metadata level). */
export interface ApiAuditEvent {
  stage: string;
  verb: string;
  requestURI: string;
  user: { username?: string; extra?: Record<string, string[]> };
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; subresource?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

/** The apiserver audit log's completed requests by `username`. */
export function auditEventsBy(auditLogPath: string, username: string): ApiAuditEvent[] {
  return readFileSync(auditLogPath, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ApiAuditEvent)
    .filter((e) => e.stage === 'ResponseComplete' && e.user?.username === username);
}

/**
 * Completed apiserver requests that created a bootstrap ServiceAccount (not its token subresource, not the
 * confinement's dry-run probe): one per credential minted. `sinceMs` leaves out earlier requests (a cluster reused across cases).
 */
export function bootstrapMints(auditLogPath: string, sinceMs = 0): ApiAuditEvent[] {
  return readFileSync(auditLogPath, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ApiAuditEvent)
    .filter(
      (e) =>
        e.stage === 'ResponseComplete' &&
        e.verb === 'create' &&
        e.objectRef?.resource === 'serviceaccounts' &&
        e.objectRef.subresource === undefined &&
        !e.requestURI.includes('dryRun=') &&
        e.objectRef.name?.startsWith('baton-bootstrap-') === true &&
        Date.parse(e.requestReceivedTimestamp) >= sinceMs,
    );
}
