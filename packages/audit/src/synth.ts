import { hash } from 'node:crypto';
import { credentialLiveSeconds, type HandoffRecord } from './handoff-record.js';

/** Options of {@link synthRecords}. */
export interface SynthOptions {
  /** Seed of the deterministic generator: the same seed gives the same records. @default 1 */
  readonly seed?: number;
  /** Number of distinct clusters the handoffs spread over. @default 24 */
  readonly clusters?: number;
  /** Start of the first handoff (epoch ms). @default 2026-01-05T08:00:00Z */
  readonly startMs?: number;
  /** Share of handoffs that fail; half as many again are aborted. @default 0.06 */
  readonly failureRate?: number;
}

const REGIONS = ['eu-west-1', 'eu-central-1', 'us-east-1', 'us-west-2', 'ap-southeast-2'] as const;
const STAGES = ['prod', 'staging', 'dev', 'edge'] as const;
const USERS = ['alice@example.com', 'bob@example.com', 'ci@github-actions', 'carol@example.com'] as const;
const FAILABLE_STEPS = ['mint', 'push', 'takeover', 'revoke', 'prove'] as const;

/**
 * Generates realistic, schema-valid handoff records without a cluster: a fleet of clusters handed off over weeks,
 * each with a scoped, bound, revoked credential and its proof; a few runs fail or are aborted at a named step.
 * Deterministic for a seed (no Math.random, no clock), so tests and benchmarks are reproducible.
 */
export function* synthRecords(count: number, options: SynthOptions = {}): Generator<HandoffRecord> {
  const seed = options.seed ?? 1;
  const clusters = Math.max(1, options.clusters ?? 24);
  const failureRate = options.failureRate ?? 0.06;
  const next = mulberry32(seed);
  let t = options.startMs ?? Date.parse('2026-01-05T08:00:00Z');
  let revision = hex(seed, 0, 'revision', 40);
  for (let i = 0; i < count; i++) {
    // A handoff every few minutes on average; the Git revision moves on every ~40 runs.
    t += Math.floor(60_000 + next() * 600_000);
    if (next() < 1 / 40) revision = hex(seed, i, 'revision', 40);
    const roll = next();
    const outcome = roll < failureRate ? 'failed' : roll < failureRate * 1.5 ? 'aborted' : 'handed-off';
    yield synthRecord({ i, seed, t, revision, outcome, next, cluster: Math.floor(next() * clusters) });
  }
}

interface RecordSeed {
  readonly i: number;
  readonly seed: number;
  readonly t: number;
  readonly revision: string;
  readonly outcome: HandoffRecord['outcome'];
  readonly next: () => number;
  readonly cluster: number;
}

function synthRecord(s: RecordSeed): HandoffRecord {
  const { i, seed, next } = s;
  const between = (lo: number, hi: number) => Math.floor(lo + next() * (hi - lo));
  const name = `${STAGES[s.cluster % STAGES.length]}-${REGIONS[s.cluster % REGIONS.length]}-${String(s.cluster).padStart(2, '0')}`;
  const failedStep =
    s.outcome === 'handed-off'
      ? undefined
      : s.outcome === 'aborted'
        ? next() < 0.5
          ? 'push'
          : 'takeover'
        : FAILABLE_STEPS[between(0, FAILABLE_STEPS.length)]!;
  const ran = (step: string) => failedStep === undefined || order(step) <= order(failedStep);
  const durations: Record<string, number> = {};
  let clock = s.t;
  const step = (stepName: string, lo: number, hi: number): number => {
    if (!ran(stepName)) return clock;
    const ms = between(lo, hi);
    durations[stepName] = ms;
    clock += ms;
    return clock;
  };
  step('plan', 20, 90);
  step('validate', 40, 300);
  const issued = step('mint', 80, 400);
  step('push', 2_000, 15_000);
  const ready = step('takeover', 8_000, 90_000);
  const revoked = step('revoke', 80, 600);
  const proved = step('prove', 10_500, 13_000);
  step('record', 3, 30);
  const iso = (ms: number) => new Date(ms).toISOString();
  const runId = `run-${hex(seed, i, 'run', 12)}`;
  const hasCredential = ran('mint') && failedStep !== 'mint';
  const hasReadiness = failedStep === undefined || order(failedStep) > order('takeover');
  // A failed or aborted run still revokes its credential on the way out (cleanup), so the window closes.
  const revokedAt = hasCredential ? (ran('revoke') ? revoked : clock + between(100, 400)) : 0;
  const credential = hasCredential
    ? {
        kind: 'serviceaccount-token' as const,
        fingerprint: `sha256:${hex(seed, i, 'token', 64)}`,
        jti: uuid(seed, i),
        subject: 'system:serviceaccount:baton-system:baton-bootstrap',
        audiences: ['https://kubernetes.default.svc'],
        boundObject: {
          kind: 'Secret' as const,
          namespace: 'baton-system',
          name: `baton-bootstrap-${hex(seed, i, 'secret', 5)}`,
          uid: uuid(seed, i + 1),
        },
        rbacRules: [
          {
            apiGroups: ['', 'apps'],
            resources: ['namespaces', 'serviceaccounts', 'deployments'],
            verbs: ['create', 'patch', 'get'],
          },
          {
            namespace: 'flux-system',
            apiGroups: ['source.toolkit.fluxcd.io'],
            resources: ['gitrepositories'],
            verbs: ['create', 'patch'],
          },
        ],
        issuedAt: iso(issued),
        expiresAt: iso(issued + 600_000),
        // A failed revoke leaves the credential alive until it expires: the report shows that window in full.
        revokedAt: failedStep === 'revoke' ? null : iso(revokedAt),
        liveSeconds: 0,
      }
    : undefined;
  if (credential) credential.liveSeconds = credentialLiveSeconds(credential);
  const proofFailed = failedStep === 'prove';
  const record: HandoffRecord = {
    runId,
    cluster: {
      name,
      server: `https://${name}.k8s.example.internal:6443`,
      caFingerprint: `sha256:${hex(seed, s.cluster, 'ca', 64)}`,
    },
    actor: {
      user: USERS[i % USERS.length]!,
      host: i % 3 === 0 ? 'ci-runner-7' : 'workstation-12',
      via: i % 3 === 0 ? 'fleet' : 'cli',
      ...(i % 3 === 0 ? { fleetRunId: `fleet-${hex(seed, Math.floor(i / 16), 'fleet', 8)}` } : {}),
    },
    outcome: s.outcome,
    ...(failedStep ? { failedStep, error: `${failedStep} did not complete: synthetic failure` } : {}),
    startedAt: iso(s.t),
    finishedAt: iso(clock),
    plan: {
      push: {
        profile: 'flux-minimal',
        bundleDigest: `sha256:${hex(seed, 0, `bundle-${s.revision}`, 64)}`,
        objectCount: 23,
        controller: {
          name: 'source-controller',
          namespace: 'flux-system',
          image: 'ghcr.io/fluxcd/source-controller',
          imageDigest: `sha256:${hex(seed, 0, 'image', 64)}`,
        },
      },
      pull: {
        source: {
          url: 'https://git.example.internal/platform/fleet.git',
          ref: 'main',
          revision: s.revision,
          path: `clusters/${name}`,
        },
        serviceAccount: { namespace: 'flux-system', name: 'source-controller' },
      },
    },
    ...(credential ? { credential } : {}),
    ...(hasReadiness
      ? {
          readiness: {
            controllerReadyAt: iso(ready),
            reconciledRevision: s.revision,
            ownedObjectCount: 23,
            ownedObjects: [
              'Namespace/flux-system',
              'Deployment/flux-system/source-controller',
              'GitRepository/flux-system/fleet',
            ],
          },
        }
      : {}),
    ...(credential && ran('revoke') && failedStep !== 'revoke'
      ? {
          revocation: {
            method: 'bound-object-deleted' as const,
            tokenReview: { authenticated: proofFailed, checkedAt: iso(proved - 40), auditId: uuid(seed, i + 2) },
            directRequest: { statusCode: proofFailed ? 200 : 401, checkedAt: iso(proved) },
          },
        }
      : {}),
    stepDurationsMs: durations,
  };
  return record;
}

function order(step: string): number {
  return ['plan', 'validate', 'mint', 'push', 'takeover', 'revoke', 'prove', 'record'].indexOf(step);
}

function hex(seed: number, i: number, label: string, length: number): string {
  const h = hash('sha256', `${seed}:${i}:${label}`, 'hex');
  return (h + hash('sha256', h, 'hex')).slice(0, length);
}

function uuid(seed: number, i: number): string {
  const h = hex(seed, i, 'uuid', 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

// mulberry32: tiny, fast and good enough to spread synthetic data; not for anything secret.
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
