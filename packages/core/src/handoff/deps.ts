import { randomBytes } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import { isProcessAlive } from '@baton/audit';
import type { KubeClients } from '@baton/kube';
import { openAuditSink } from '../audit-sink.js';
import { systemClock } from '../clock.js';
import { type GitAuth, resolveGitRevision } from '../git-revision.js';
import type { HandoffPlan, LoadedPlan } from '../handoff-plan.js';
import { createLogger } from '../logger.js';
import { planSecrets } from '../manifest-secrets.js';
import type { HandoffActor, HandoffDeps } from './types.js';

/** A run id: UTC time and 6 random hex digits, DNS-safe and sortable. */
export function newRunId(now = new Date()): string {
  const t = now.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return `${t}-${randomBytes(3).toString('hex')}`;
}

/** Options of {@link createHandoffDeps}. */
export interface CreateHandoffDepsOptions {
  /** Which entry point runs the handoff. @default 'cli' */
  readonly via?: HandoffActor['via'];
  /**
   * Basic-auth credentials for resolving `pull.source.ref` with `git ls-remote` (never in argv or the URL).
   * @default the plan's pull credential (`pull.credential.fromFile`: its username and password), read only when the
   * plan pins no revision: the repository the controller will pull is the one whose ref is resolved
   */
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
    isPidAlive: isProcessAlive,
    resolveRevision: (source) => resolveGitRevision(source, options.gitAuth ?? pullGitAuth(loaded.plan)),
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

/**
 * The plan's pull credential as Git basic auth (its `username` and `password` keys), or undefined when the plan has no
 * credential file or the file has no such pair (a bearer token: then only `BATON_GIT_USERNAME`/`PASSWORD` help).
 * @throws {ConfigError} naming the file, never its content, when it cannot be read.
 */
export function pullGitAuth(plan: HandoffPlan): GitAuth | undefined {
  if (!plan.pull.credential.fromFile) return undefined;
  const secret = planSecrets({ ...plan, push: { ...plan.push, secrets: [] } })[0]?.object as
    | { stringData?: Record<string, string> }
    | undefined;
  const { username, password } = secret?.stringData ?? {};
  return username !== undefined && password !== undefined ? { username, password } : undefined;
}
