// `pnpm bench:handoff [--runs N]`: what a handoff costs on the local control plane, against a pure push.
// Each run gets a fresh cluster. In it, first the pure-push baseline (the operator's credential server-side-applies
// the same manifests, renamed into their own namespace, and waits for the Deployment to be Available; that
// credential is never revoked), then a full handoff. Writes bench/results/handoff.json with medians.
import { writeFile } from 'node:fs/promises';
import { createLogger, type HandoffPlan, loadManifestSet } from '@baton/core';
import {
  clientsFromKubeconfigFile,
  deploymentState,
  type KubeObject,
  kindsFromCrds,
  serverSideApply,
} from '@baton/kube';
import { pollUntil } from '@baton/testenv';
import { startLocalHandoff } from './local-handoff.js';
import { median } from './stats.js';

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1]) || 5;
const resultPath = new URL('./results/handoff.json', import.meta.url).pathname;
const log = (s: string) => process.stderr.write(`${s}\n`);
const r2 = (n: number) => Math.round(n * 100) / 100;

/**
 * The install renamed into `baseline-system` (the controller's name suffixed), without CRDs and their kinds (a CRD
 * is cluster-wide and would be shared with the handoff). The real node pulls and starts the same image; its
 * readiness probes are dropped, since the controller is ready only once it has synced its source, which the
 * baseline (with no source object, a custom kind) never has: Available then means pushed, pulled and started.
 */
function baseline(plan: HandoffPlan, objects: readonly KubeObject[]): KubeObject[] {
  const custom = kindsFromCrds(objects);
  const kept = objects.filter((o) => o.kind !== 'CustomResourceDefinition' && !custom[o.kind]);
  const text = JSON.stringify(kept)
    .replaceAll(`"${plan.controller.namespace}"`, '"baseline-system"')
    .replaceAll(`"${plan.controller.name}"`, `"${plan.controller.name}-baseline"`);
  const renamed = JSON.parse(text) as KubeObject[];
  for (const o of renamed) {
    const pod = (o as { spec?: { template?: { spec?: { containers?: Record<string, unknown>[] } } } }).spec?.template
      ?.spec;
    for (const c of pod?.containers ?? []) delete c.readinessProbe;
  }
  return renamed;
}

const samples: {
  totalSeconds: number;
  readinessSeconds: number;
  liveSeconds: number;
  overheadSeconds: number;
  proofWaitSeconds: number;
  purePushSeconds: number;
  writeWindowSeconds: number;
  privilegeWindowSeconds: number;
  pushSeconds: number;
  confineSeconds: number;
  confinementLiveSeconds: number;
  closeSeconds: number;
  takeoverRequests: number;
  takeoverWaitSeconds: number;
  takeoverRequestsPerSecond: number;
  takeoverRequestsAfterOpeningPerSecond: number;
}[] = [];

/**
 * The takeover wait's cost from the run's own log: the requests it sent (`takeoverRequests` of "controller took over")
 * over the seconds from the `takeover` step to the next one. The apiserver's count of the same requests is checked
 * against this one in test/integration/handoff/object-watch.test.ts.
 */
function takeoverRequestRate(
  lines: { msg?: string; step?: string; time: string; takeoverRequests?: number; takeoverObjects?: number }[],
) {
  const steps = lines.filter((e) => e.msg === 'step');
  const i = steps.findIndex((e) => e.step === 'takeover');
  const done = lines.find((e) => e.msg === 'controller took over');
  if (i < 0 || !steps[i + 1] || done?.takeoverRequests === undefined)
    throw new Error(`the run did not log its takeover: ${JSON.stringify(lines.map((e) => e.msg))}`);
  const seconds = (Date.parse(steps[i + 1]!.time) - Date.parse(steps[i]!.time)) / 1000;
  const requests = done.takeoverRequests;
  const afterOpening = Math.max(0, requests - (done.takeoverObjects ?? 0));
  return {
    requests,
    seconds,
    perSecond: requests / Math.max(0.001, seconds),
    // Once each followed object has had its one watch: the rate a long wait tends to.
    afterOpeningPerSecond: afterOpening / Math.max(0.001, seconds),
  };
}

for (let i = 0; i < runs; i++) {
  const local = await startLocalHandoff(`bench-handoff-${process.pid}-${i}`);
  try {
    const operator = clientsFromKubeconfigFile(local.kubeconfigPath);
    const { plan } = local.loaded;
    const objects = baseline(
      plan,
      loadManifestSet(plan).objects.map((m) => m.object),
    );
    const t0 = performance.now();
    await serverSideApply(operator, objects, { fieldManager: 'baseline-push' });
    await pollUntil(
      async () =>
        (await deploymentState(operator, 'baseline-system', `${plan.controller.name}-baseline`)).isAvailable ||
        undefined,
      { timeoutMs: 120_000, intervalMs: 250, what: 'the baseline Deployment to be Available' },
    );
    const purePushSeconds = (performance.now() - t0) / 1000;
    const lines: Parameters<typeof takeoverRequestRate>[0] = [];
    const runLog = createLogger({
      level: 'info',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    const s = await local.run(runLog);
    const takeover = takeoverRequestRate(lines);
    if (s.outcome !== 'handed-off') throw new Error(`run ${i}: ${s.outcome}: ${s.error}`);
    const sample = {
      totalSeconds: s.totalSeconds,
      readinessSeconds: s.readinessSeconds ?? 0,
      liveSeconds: s.credential?.liveSeconds ?? 0,
      overheadSeconds: s.overheadSeconds ?? 0,
      proofWaitSeconds: s.proof?.proofWaitSeconds ?? 0,
      purePushSeconds,
      writeWindowSeconds: s.credential?.writeWindowSeconds ?? 0,
      privilegeWindowSeconds: s.credential?.privilegeWindowSeconds ?? 0,
      pushSeconds: (s.stepDurationsMs.push ?? 0) / 1000,
      // Before the mint: dry runs of the plan and the policy's install (not in the live window).
      confineSeconds: (s.stepDurationsMs.confine ?? 0) / 1000,
      // In the live window: the probe outside the plan, and closing the window after the push.
      // In the live window: the probe outside the plan before the push, and whatever of closing the window after it
      // outlasted the takeover wait (the two run side by side).
      confinementLiveSeconds:
        (s.confinement?.probeSeconds ?? 0) +
        Math.max(0, (s.confinement?.closeSeconds ?? 0) - (s.readinessSeconds ?? 0)),
      closeSeconds: s.confinement?.closeSeconds ?? 0,
      takeoverRequests: takeover.requests,
      takeoverWaitSeconds: takeover.seconds,
      takeoverRequestsPerSecond: takeover.perSecond,
      takeoverRequestsAfterOpeningPerSecond: takeover.afterOpeningPerSecond,
    };
    if (!s.confinement?.probeDenied) throw new Error(`run ${i}: the confinement probe was not denied`);
    samples.push(sample);
    log(
      `run ${i + 1}/${runs}: ${JSON.stringify(Object.fromEntries(Object.entries(sample).map(([k, v]) => [k, r2(v)])))}`,
    );
  } finally {
    await local.stop();
  }
}

const pick = (k: keyof (typeof samples)[number]) => r2(median(samples.map((s) => s[k])));
const result = {
  runs,
  measuredAt: new Date().toISOString(),
  controller: 'baton-controller',
  totalSeconds: pick('totalSeconds'),
  readinessSeconds: pick('readinessSeconds'),
  liveSeconds: pick('liveSeconds'),
  proofWaitSeconds: pick('proofWaitSeconds'),
  overheadSeconds: pick('overheadSeconds'),
  purePushSeconds: pick('purePushSeconds'),
  writeWindowSeconds: pick('writeWindowSeconds'),
  privilegeWindowSeconds: pick('privilegeWindowSeconds'),
  pushSeconds: pick('pushSeconds'),
  confineSeconds: pick('confineSeconds'),
  confinementLiveSeconds: pick('confinementLiveSeconds'),
  closeSeconds: pick('closeSeconds'),
  takeoverRequests: pick('takeoverRequests'),
  takeoverWaitSeconds: pick('takeoverWaitSeconds'),
  takeoverRequestsPerSecond: pick('takeoverRequestsPerSecond'),
  takeoverRequestsAfterOpeningPerSecond: pick('takeoverRequestsAfterOpeningPerSecond'),
  targets: {
    overheadAtMost2s: pick('overheadSeconds') <= 2,
    liveAtMostReadinessPlus12s: pick('liveSeconds') <= pick('readinessSeconds') + 12,
    // Issue 9: the confinement adds at most 0.5 s to the live window; the write window ends within 1 s of the push.
    confinementLiveAtMost0_5s: pick('confinementLiveSeconds') <= 0.5,
    writeWindowAtMostPushPlus1s: pick('writeWindowSeconds') <= pick('pushSeconds') + 1,
    // Issue 18: the credential is authorized for nothing of the plan within 0.5 s of the push.
    privilegeWindowAtMostPushPlus0_5s: pick('privilegeWindowSeconds') <= pick('pushSeconds') + 0.5,
    // Issue 26: the takeover waits with watches; it read every object every 250 ms before (about 31 requests a second).
    // A wait must read each object once: a 1.5 s wait over 10 objects is 6-7 a second by that alone, so the target is
    // on what it sends after that (takeoverRequestsPerSecond, the plain average, is reported beside it).
    takeoverAfterOpeningAtMost2RequestsPerSecond: pick('takeoverRequestsAfterOpeningPerSecond') <= 2,
  },
  notes:
    'liveSeconds runs from the TokenRequest to the first 401 with the revoked token; it includes the API server token cache (10 s) as proofWaitSeconds. overheadSeconds = liveSeconds - readinessSeconds - proofWaitSeconds. purePushSeconds: operator SSA of the same manifests + Deployment Available, credential never revoked. writeWindowSeconds: TokenRequest to the first denial of a planned write after the push (by the closed confinement or, once the bindings are deleted, by RBAC). privilegeWindowSeconds: TokenRequest to the first SelfSubjectAccessReview, as the token, denying get on every planned Secret (the bindings are deleted alongside the close); the three windows are writeWindowSeconds, privilegeWindowSeconds and liveSeconds. confineSeconds: dry runs of the plan and the policy install, before the mint (outside the live window). confinementLiveSeconds: what the confinement adds to the live window (the probe outside the plan before the push, plus what of closing the window after it outlasted the takeover wait, which runs alongside). closeSeconds: from the end of the push until a planned write and a planned read were both denied. takeoverRequests: what the takeover wait sent (one watch per object it reads, reads it could not answer from them, a pod list at most every 5 s while a Deployment is not Available), over takeoverWaitSeconds (the takeover step, as logged); takeoverRequestsAfterOpeningPerSecond leaves out the one watch per followed object; the close and the post-close check run alongside and are not counted.',
  samples: samples.map((s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, r2(v)]))),
};
await writeFile(resultPath, `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
if (Object.values(result.targets).some((ok) => !ok)) process.exitCode = 1;
