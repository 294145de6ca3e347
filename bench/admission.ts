// `pnpm bench:admission [--runs N] [--profiles baton-controller,flux,argocd]`: what the confinement costs the API
// server's admission, per profile set. Each run starts two fresh beds of the profile:
// - baseline: the operator server-side-applies the same set in apply order, no policy anywhere;
// - handoff: a full handoff, the push confined by the plan's ValidatingAdmissionPolicy.
// Around the baseline push and the handoff's push step it reads the API server's own histogram of the time its
// ValidatingAdmissionPolicy plugin spends per request (apiserver_admission_controller_admission_duration_seconds,
// name="ValidatingAdmissionPolicy", every request of the window: the pushes' and what the cluster does meanwhile).
// Writes bench/results/admission.json with medians. Flux's and Argo CD's builds must be cached (`pnpm test:gitops`,
// `pnpm baton testenv build --flux --argocd`) or take minutes.
import { writeFile } from 'node:fs/promises';
import {
  createHandoffDeps,
  createLogger,
  type HandoffSummary,
  loadHandoffPlan,
  loadManifestSet,
  runHandoff,
} from '@baton/core';
import { clientsFromKubeconfigFile, describeObject, type KubeObject, statusOf } from '@baton/kube';
import type { KubeRestClient } from '@baton/kube/rest';
import type { HandoffBed } from '@baton/testenv/beds';
import { startDemoBed } from '../scripts/demo/bed.js';
import { median, round } from './stats.js';

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1]) || 3;
const profiles = (args.includes('--profiles') ? args[args.indexOf('--profiles') + 1]! : 'baton-controller,flux,argocd')
  .split(',')
  .map((p) => p.trim()) as ('baton-controller' | 'flux' | 'argocd')[];
const resultPath = new URL('./results/admission.json', import.meta.url).pathname;
const log = (s: string) => process.stderr.write(`${s}\n`);

const METRIC = 'apiserver_admission_controller_admission_duration_seconds';

/** The ValidatingAdmissionPolicy plugin's histogram, summed over operations: seconds, requests, requests ≤ 5 ms. */
interface PluginTime {
  readonly seconds: number;
  readonly requests: number;
  readonly within5ms: number;
}

async function pluginTime(http: KubeRestClient): Promise<PluginTime> {
  const res = await http.raw('GET', '/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics: HTTP ${res.status}`);
  let seconds = 0;
  let requests = 0;
  let within5ms = 0;
  for (const line of String(res.body).split('\n')) {
    if (!line.startsWith(METRIC) || !line.includes('name="ValidatingAdmissionPolicy"')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith(`${METRIC}_sum{`)) seconds += value;
    else if (line.startsWith(`${METRIC}_count{`)) requests += value;
    else if (line.startsWith(`${METRIC}_bucket{`) && line.includes('le="0.005"')) within5ms += value;
  }
  return { seconds, requests, within5ms };
}

const delta = (a: PluginTime, b: PluginTime): PluginTime => ({
  seconds: b.seconds - a.seconds,
  requests: b.requests - a.requests,
  within5ms: b.within5ms - a.within5ms,
});

function startBed(profile: (typeof profiles)[number], name: string): Promise<HandoffBed> {
  return (
    profile === 'baton-controller' ? startDemoBed({ name }) : startDemoBed({ name, profile })
  ) as Promise<HandoffBed>;
}

/** The operator's plain push of the set: apply order, a custom kind retried until its CRD serves it. */
async function operatorPush(bed: HandoffBed): Promise<number> {
  const { plan } = loadHandoffPlan(bed.side.planPath);
  const objects: KubeObject[] = loadManifestSet(plan).objects.map((m) => m.object);
  const operator = clientsFromKubeconfigFile(bed.kubeconfigPath);
  const t0 = performance.now();
  for (const o of objects) {
    for (let waited = 0; ; waited += 100) {
      try {
        await operator.rest.apply(o, { fieldManager: 'baseline-push', force: true });
        break;
      } catch (err) {
        if (statusOf(err) !== 404 || waited > 30_000) throw new Error(`apply ${describeObject(o)}: ${err}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  return (performance.now() - t0) / 1000;
}

interface Sample {
  readonly baselinePushSeconds: number;
  readonly baselineRequests: number;
  readonly baselineAdmissionMs: number;
  readonly baselineMeanMs: number;
  readonly confinedPushSeconds: number;
  readonly confinedRequests: number;
  readonly confinedAdmissionMs: number;
  readonly confinedMeanMs: number;
  readonly confinedWithin5msShare: number;
  readonly policyBytes: number;
  readonly validations: number;
  readonly objects: number;
}

const perProfile: Record<string, unknown> = {};
for (const profile of profiles) {
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    const tag = `bench-adm-${profile.slice(0, 5)}-${process.pid}-${i}`;
    const base = await startBed(profile, `${tag}-b`);
    let baseline: PluginTime;
    let baselinePushSeconds: number;
    try {
      const http = clientsFromKubeconfigFile(base.kubeconfigPath).rest;
      const before = await pluginTime(http);
      baselinePushSeconds = await operatorPush(base);
      baseline = delta(before, await pluginTime(http));
      http.close();
    } finally {
      await base.stop();
    }
    const bed = await startBed(profile, `${tag}-h`);
    try {
      const http = clientsFromKubeconfigFile(bed.kubeconfigPath).rest;
      const loaded = loadHandoffPlan(bed.side.planPath);
      let atPush: PluginTime | undefined;
      let confined: PluginTime | undefined;
      const deps = createHandoffDeps(loaded, clientsFromKubeconfigFile(bed.kubeconfigPath), {
        overrides: {
          log: createLogger({ level: 'silent' }),
          onStep: async (step) => {
            if (step === 'push') atPush = await pluginTime(http);
            else if (atPush && !confined) confined = delta(atPush, await pluginTime(http));
          },
        },
      });
      const s: HandoffSummary = await runHandoff(loaded, deps);
      http.close();
      if (s.outcome !== 'handed-off' || !confined) throw new Error(`${profile} run ${i}: ${s.outcome}: ${s.error}`);
      const sample: Sample = {
        baselinePushSeconds,
        baselineRequests: baseline.requests,
        baselineAdmissionMs: baseline.seconds * 1000,
        baselineMeanMs: (baseline.seconds * 1000) / Math.max(1, baseline.requests),
        confinedPushSeconds: (s.stepDurationsMs.push ?? 0) / 1000,
        confinedRequests: confined.requests,
        confinedAdmissionMs: confined.seconds * 1000,
        confinedMeanMs: (confined.seconds * 1000) / Math.max(1, confined.requests),
        confinedWithin5msShare: confined.within5ms / Math.max(1, confined.requests),
        policyBytes: s.confinement?.policyBytes ?? 0,
        validations: s.confinement?.validationCount ?? 0,
        objects: s.confinement?.allowed.length ?? 0,
      };
      samples.push(sample);
      log(
        `${profile} run ${i + 1}/${runs}: ${JSON.stringify(Object.fromEntries(Object.entries(sample).map(([k, v]) => [k, round(v, 3)])))}`,
      );
    } finally {
      await bed.stop();
    }
  }
  const pick = (k: keyof Sample) => round(median(samples.map((s) => s[k])), 3);
  perProfile[profile] = {
    objects: pick('objects'),
    policyBytes: pick('policyBytes'),
    validations: pick('validations'),
    baseline: {
      pushSeconds: pick('baselinePushSeconds'),
      requests: pick('baselineRequests'),
      admissionMs: pick('baselineAdmissionMs'),
      meanMsPerRequest: pick('baselineMeanMs'),
    },
    confined: {
      pushSeconds: pick('confinedPushSeconds'),
      requests: pick('confinedRequests'),
      admissionMs: pick('confinedAdmissionMs'),
      meanMsPerRequest: pick('confinedMeanMs'),
      within5msShare: pick('confinedWithin5msShare'),
    },
    addedMeanMsPerRequest: round(pick('confinedMeanMs') - pick('baselineMeanMs'), 3),
    // The identity's writes carry nearly all of the policy's cost (other requests only evaluate its match conditions).
    addedMsPerPlannedObject: round(
      median(samples.map((s) => (s.confinedAdmissionMs - s.baselineAdmissionMs) / Math.max(1, s.objects))),
      3,
    ),
    samples: samples.map((s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, round(v, 3)]))),
  };
}

// Issue 19's ceilings, as first measured (2026-12-04: at most 15.2 ms per planned object, policies at most 200,969
// bytes): the policy stays within 256 KB, and admission adds at most 20 ms per planned object.
const targets = Object.fromEntries(
  Object.entries(perProfile).flatMap(([profile, r]) => {
    const p = r as { policyBytes: number; addedMsPerPlannedObject: number };
    return [
      [`${profile}PolicyAtMost256KB`, p.policyBytes <= 256 * 1024],
      [`${profile}AdmissionAtMost20msPerObject`, p.addedMsPerPlannedObject <= 20],
    ];
  }),
);

const result = {
  runs,
  measuredAt: new Date().toISOString(),
  profiles: perProfile,
  targets,
  notes:
    "Admission time is the API server's own histogram apiserver_admission_controller_admission_duration_seconds for name=ValidatingAdmissionPolicy, summed over operations, as deltas: baseline = around the operator's plain server-side apply of the same set (no policy) on a fresh bed; confined = from the start of the handoff's push step to the start of takeover (the bootstrap identity's writes under the plan's policy, with the CRD waits). Both windows include whatever else the cluster does meanwhile (controllers, kubelet). meanMsPerRequest = admissionMs / requests; within5msShare = requests in the histogram's first bucket (≤ 5 ms).",
};
await writeFile(resultPath, `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
if (Object.values(targets).some((ok) => !ok)) process.exitCode = 1;
