// A thief with a token for the run's bootstrap identity rewrites a planned Secret's value while the confinement is
// still plan-shaped (the run frozen with SIGSTOP as the write window is about to close), and what the cluster holds
// afterwards: every profile's test asserts the same (issue 29).
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readEntries } from '@baton/audit';
import type { HandoffSummary } from '@baton/core';
import { clientsFromKubeconfigFile, findBootstrapLeftovers, probeToken, type WorkloadRef } from '@baton/kube';
import type { ControllerSide, HandoffBed } from '@baton/testenv/beds';
import { expect } from 'vitest';
import { type AttemptResult, attacker, stealToken } from './attacker.js';
import { JWT_PATTERN, runBaton } from './handoff-run.js';
import { adminClients, confinementsLeft } from './kube.js';

const _execFileAsync = promisify(execFile);
const HELD_RUN = fileURLToPath(new URL('./close-held-run.ts', import.meta.url));
/** The value the thief writes under every key of the Secret (its base64 is grepped for in every output). */
export const THIEF_VALUE = 'thief-value-7d41c0';

/** What the thief targets and where the controller runs. */
export interface TamperTarget {
  /** Planned Secrets the push creates (the pull credential, Argo CD's repository Secret …): each is rewritten. */
  readonly secrets: readonly { readonly namespace: string; readonly name: string }[];
  /** The pushed workloads whose pods must all have started after the repair. */
  readonly workloads: readonly WorkloadRef[];
}

/** What one frozen-and-tampered run left: its summary, exit code, output, and the thief's attempts. */
export interface TamperedRun {
  readonly summary: HandoffSummary;
  readonly exitCode: number | null;
  readonly output: string;
  readonly attempts: Record<string, AttemptResult>;
  /** Tokens the thief held (one per identity it stole from). */
  readonly stolen: string[];
  readonly runId: string;
}

/**
 * Runs the engine in a child that stops itself as each write window in `closes` is about to close (1: the handoff's,
 * 2: the repair's); at each stop, the thief requests a token for the window's identity (the policy's name) and
 * rewrites every key of each of `target.secrets` with {@link THIEF_VALUE}; then the run resumes.
 */
export async function runWithThief(
  bed: HandoffBed<ControllerSide>,
  target: TamperTarget,
  closes: readonly number[],
): Promise<TamperedRun> {
  const admin = adminClients(bed.kubeconfigPath);
  const child = spawn(
    process.execPath,
    [
      '--conditions=@baton/source',
      '--import',
      'tsx',
      HELD_RUN,
      bed.side.planPath,
      bed.kubeconfigPath,
      closes.join(','),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  const attempts: Record<string, AttemptResult> = {};
  const stolen: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let acting = Promise.resolve();
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  child.stdout.on('data', (d) => {
    stdout += d;
    for (const m of String(d).matchAll(/held at close (\d+) (\S+)/g)) {
      const [, n, sa] = m;
      acting = acting.then(() => actAsThief(n ?? '', sa ?? '').finally(() => child.kill('SIGCONT')));
    }
  });
  const actAsThief = async (n: string, sa: string) => {
    const token = await stealToken(admin, 'baton-system', sa);
    stolen.push(token);
    const { out, attempt, apply } = attacker(bed.kubeconfigPath, token);
    const value = Buffer.from(THIEF_VALUE).toString('base64');
    for (const secret of target.secrets) {
      const live = await admin.core.readNamespacedSecret(secret);
      await attempt(`rewrite ${secret.name} at close ${n}`, () =>
        apply({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { ...secret, ...(live.metadata?.labels ? { labels: live.metadata.labels } : {}) },
          type: live.type ?? 'Opaque',
          data: Object.fromEntries(Object.keys(live.data ?? {}).map((k) => [k, value])),
        }),
      );
    }
    Object.assign(attempts, out);
  };
  // A run that never ends (a stopped child nobody resumes) is killed, so no process outlives the test.
  const guard = setTimeout(() => child.kill('SIGKILL'), 480_000);
  const exitCode = await exited.finally(() => clearTimeout(guard));
  await acting;
  const line = stdout.split('\n').find((l) => l.startsWith('summary '));
  if (!line) throw new Error(`the held run printed no summary (exit ${exitCode}):\n${stderr.slice(-4000)}`);
  const summary = JSON.parse(line.slice('summary '.length)) as HandoffSummary;
  return { summary, exitCode, output: `${stdout}\n${stderr}`, attempts, stolen, runId: summary.runId };
}

/** The Secret's values as the cluster holds them (base64), or undefined when it is gone. */
export async function secretData(bed: HandoffBed<ControllerSide>, s: TamperTarget['secrets'][number]) {
  const admin = adminClients(bed.kubeconfigPath);
  return admin.core.readNamespacedSecret(s).then(
    (x) => x.data ?? {},
    () => undefined,
  );
}

/** The pods a workload has (by its selector), with their creation times. */
export async function podsOf(bed: HandoffBed<ControllerSide>, w: WorkloadRef) {
  const admin = adminClients(bed.kubeconfigPath);
  const read =
    w.kind === 'StatefulSet'
      ? admin.apps.readNamespacedStatefulSet({ namespace: w.namespace, name: w.name })
      : admin.apps.readNamespacedDeployment({ namespace: w.namespace, name: w.name });
  const live = await read.catch(() => undefined);
  const labels = live?.spec?.selector?.matchLabels ?? {};
  if (!live) return [];
  const labelSelector = Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return (await admin.core.listNamespacedPod({ namespace: w.namespace, labelSelector })).items;
}

/** What every tampered run leaves, repaired or stopped: no identity, no confinement, stolen tokens dead, no secret out. */
export async function expectNothingLeftAndNothingLeaked(
  bed: HandoffBed<ControllerSide>,
  r: TamperedRun,
  planned: readonly string[],
): Promise<void> {
  const admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
  expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
  expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
  for (const token of r.stolen) {
    await expect.poll(() => probeToken(admin, token), { timeout: 30_000, interval: 500 }).toBe(401);
  }
  const auditText = readFileSync(bed.side.auditLogPath, 'utf8');
  for (const text of [r.output, JSON.stringify(r.summary), auditText]) {
    for (const v of [THIEF_VALUE, ...planned]) {
      expect(text).not.toContain(v);
      expect(text).not.toContain(Buffer.from(v).toString('base64'));
    }
    for (const t of r.stolen) expect(text).not.toContain(t);
    expect(text).not.toMatch(JWT_PATTERN);
  }
}

/** The handoff events of the bed's audit log, and `baton audit verify`'s verdict on it. */
export async function auditEvents(bed: HandoffBed<ControllerSide>) {
  const events = [];
  for await (const e of readEntries(bed.side.auditLogPath)) events.push(e.statement.predicate);
  const verify = await runBaton(['audit', 'verify', bed.side.auditLogPath, '--keys', bed.side.keysPath]).then(
    () => 0,
    (e: { code?: number }) => e.code ?? 1,
  );
  return { events, verifyExit: verify };
}

/** `baton up -o json` of the bed's plan, as a user reruns it. */
export async function rerunUp(bed: HandoffBed<ControllerSide>): Promise<{ summary: HandoffSummary; output: string }> {
  const r = await runBaton(['up', '--plan', bed.side.planPath, '-o', 'json']).catch(
    (e: { stdout: string; stderr: string }) => e,
  );
  return { summary: JSON.parse(r.stdout) as HandoffSummary, output: `${r.stdout}\n${r.stderr}` };
}

/**
 * The whole story for one profile: a caught rewrite is repaired (planned values back, every controller pod replaced
 * after the repair, outcome tampered, exit 1, the audit log verifies and names each object and field, nothing left),
 * and a rerun of `baton up` hands off without repeating the repair.
 */
export async function expectRewriteRepaired(bed: HandoffBed<ControllerSide>, target: TamperTarget): Promise<void> {
  const r = await runWithThief(bed, target, [1]);
  const s = r.summary;
  const names = target.secrets.map((x) => `Secret/${x.namespace}/${x.name}`);
  for (const x of target.secrets)
    expect(r.attempts[`rewrite ${x.name} at close 1`]?.status, JSON.stringify(r.attempts)).toBe(200);
  expect(s.outcome, s.error).toBe('tampered');
  expect(r.exitCode).toBe(1);
  expect(s.failedStep).toBe('post-close-check');
  expect(s.errorCode).toBe('tampered');
  const repair = s.tampering?.repair;
  for (const name of names) {
    expect(s.tampering?.objects.map((o) => o.object)).toContain(name);
    expect(s.tampering?.objects.find((o) => o.object === name)?.fields.join(' ')).toMatch(/data\[/);
    expect(repair?.repushed).toContain(name);
  }
  expect(repair?.outcome, repair?.error ?? s.error).toBe('repaired');
  expect(repair?.error).toBeUndefined();
  expect(repair?.credential?.subject).toContain(`${s.runId}-repair`);
  expect(repair?.credential?.tokenReviewAuthenticated).toBe(false);
  expect(s.error).toContain('repaired in');
  // The planned values are back, and every controller pod started after the repair was verified.
  const decoded: string[] = [];
  for (const x of target.secrets) {
    const held = await secretData(bed, x);
    expect(held, x.name).toBeDefined();
    expect(Object.values(held ?? {})).not.toContain(Buffer.from(THIEF_VALUE).toString('base64'));
    decoded.push(...Object.values(held ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8')));
  }
  expect(
    decoded.some((v) => bed.side.secretValues.includes(v)),
    'a planned value is back',
  ).toBe(true);
  const verifiedAt = new Date(repair?.verifiedAt ?? 0).getTime();
  for (const w of target.workloads) {
    const pods = await podsOf(bed, w);
    expect(pods.length, `${w.kind}/${w.name} pods`).toBeGreaterThan(0);
    for (const p of pods) {
      // creationTimestamp has whole seconds.
      expect(new Date(p.metadata?.creationTimestamp ?? 0).getTime()).toBeGreaterThanOrEqual(
        Math.floor(verifiedAt / 1000) * 1000,
      );
    }
  }
  const { events, verifyExit } = await auditEvents(bed);
  expect(verifyExit).toBe(0);
  const e = events.at(-1);
  expect(e?.outcome).toBe('tampered');
  expect(e?.failedStep).toBe('post-close-check');
  for (const name of names) expect(e?.tampering?.objects.map((o) => o.object)).toContain(name);
  expect(e?.tampering?.repair?.outcome).toBe('repaired');
  await expectNothingLeftAndNothingLeaked(bed, r, bed.side.secretValues);

  // A rerun hands off, pushes only what the controller does not own, and restarts nothing.
  const podsBefore = new Map<string, string[]>();
  for (const w of target.workloads)
    podsBefore.set(
      w.name,
      (await podsOf(bed, w)).map((p) => p.metadata?.uid ?? ''),
    );
  const again = await rerunUp(bed);
  expect(again.summary.outcome, again.summary.error).toBe('handed-off');
  expect(again.summary.tampering).toBeUndefined();
  for (const w of target.workloads)
    expect((await podsOf(bed, w)).map((p) => p.metadata?.uid ?? '')).toEqual(podsBefore.get(w.name));
}

/**
 * A thief who rewrites again during the repair (with a token for the repair identity): the run ends `tampered` with
 * the workloads and the tampered Secrets deleted, says so, and leaves no thief value in the cluster.
 */
export async function expectRewriteDuringRepairStopped(
  bed: HandoffBed<ControllerSide>,
  target: TamperTarget,
): Promise<TamperedRun> {
  const r = await runWithThief(bed, target, [1, 2]);
  const s = r.summary;
  for (const x of target.secrets)
    expect(r.attempts[`rewrite ${x.name} at close 2`]?.status, JSON.stringify(r.attempts)).toBe(200);
  expect(s.outcome, s.error).toBe('tampered');
  expect(r.exitCode).toBe(1);
  const repair = s.tampering?.repair;
  expect(repair?.outcome, s.error).toBe('stopped');
  expect(s.error).toContain('stopped instead');
  expect(repair?.error).toContain('rewritten again during the repair');
  for (const x of target.secrets) {
    expect(repair?.stopped).toContain(`Secret/${x.namespace}/${x.name}`);
    expect(await secretData(bed, x)).toBeUndefined();
  }
  for (const w of target.workloads) {
    expect(repair?.stopped).toContain(`${w.kind}/${w.namespace}/${w.name}`);
    expect(await podsOf(bed, w)).toEqual([]);
  }
  const { events, verifyExit } = await auditEvents(bed);
  expect(verifyExit).toBe(0);
  expect(events.at(-1)?.tampering?.repair?.outcome).toBe('stopped');
  await expectNothingLeftAndNothingLeaked(bed, r, bed.side.secretValues);
  return r;
}
