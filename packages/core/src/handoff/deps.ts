import { randomBytes } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import type { KubeClients } from '@baton/kube';
import { openAuditSink } from '../audit-sink.js';
import { systemClock } from '../clock.js';
import { resolveGitRevision } from '../git-revision.js';
import type { LoadedPlan } from '../handoff-plan.js';
import { createLogger } from '../logger.js';
import type { HandoffActor, HandoffDeps } from './types.js';

/** A run id: UTC time and 6 random hex digits, DNS-safe and sortable. */
export function newRunId(now = new Date()): string {
  const t = now.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return `${t}-${randomBytes(3).toString('hex')}`;
}

/** Whether a local process exists (signal 0 checks without sending anything; EPERM means it exists). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Options of {@link createHandoffDeps}. */
export interface CreateHandoffDepsOptions {
  /** Which entry point runs the handoff. @default 'cli' */
  readonly via?: HandoffActor['via'];
  /** Basic-auth credentials for resolving `pull.source.ref` with `git ls-remote` (never in argv or the URL). */
  readonly gitAuth?: { readonly username: string; readonly password: string };
  /** Anything else to replace (tests: a capturing logger, a fixed run id, a hook). */
  readonly overrides?: Partial<HandoffDeps>;
}

/**
 * The real collaborators of a handoff (system clock, a pino logger, the plan's audit log, this process as the actor,
 * random run ids, `git ls-remote`), with `overrides` on top. Every entry point (CLI, Pulumi, fleet, demo, tests)
 * builds its deps here.
 */
export function createHandoffDeps(
  loaded: LoadedPlan,
  operator: KubeClients,
  options: CreateHandoffDepsOptions = {},
): HandoffDeps {
  return {
    operator,
    clock: systemClock,
    log: createLogger(),
    audit: openAuditSink(loaded.plan.audit),
    actor: { user: osUser(), host: hostname(), pid: process.pid, via: options.via ?? 'cli' },
    newRunId: () => newRunId(),
    isPidAlive,
    resolveRevision: (source) => resolveGitRevision(source, options.gitAuth),
    ...options.overrides,
  };
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}
