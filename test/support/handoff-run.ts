import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createHandoffDeps, createLogger, type HandoffDeps, type LoadedPlan } from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';
import { type ApiserverAuditEvent, apiserverRequestsBy } from '@baton/testenv';

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
export type ApiAuditEvent = ApiserverAuditEvent;

/** The apiserver audit log's completed requests by `username`. */
export const auditEventsBy = apiserverRequestsBy;

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

/**
 * `baton` as npm installs it: the package's bin, which runs the compiled dist (test/setup/build.ts brings dist up to
 * date before any test runs). The sources through tsx would transpile every module in every process: 4.2 s of CPU
 * for a `baton up` that stops at its plan, against 1.6 s compiled (measured on 2 busy cores), and the suite starts
 * hundreds of them.
 */
export const CLI = fileURLToPath(new URL('../../packages/cli/bin/baton.js', import.meta.url));

/** Runs `baton <args>`; rejects (with stdout, stderr and code) on a non-zero exit. */
export function runBaton(args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [CLI, ...args]);
}

/** Starts `baton up` and kills it with SIGKILL once the push has started (the credential is live, objects applying). */
export async function killDuringPush(planPath: string): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, 'up', '--plan', planPath, '-o', 'json', '--verbose'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      if (stderr.includes('"step":"push"')) resolve();
    });
    child.on('exit', () => reject(new Error(`baton up exited before the push:\n${stderr}`)));
  });
  child.kill('SIGKILL');
  return { signal: await exited, stderr };
}
