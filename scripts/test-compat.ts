// `pnpm test:compat [1.35.4 …]`: runs the handoff tests that rest on version-sensitive API server machinery
// (ValidatingAdmissionPolicy CEL, server-side apply, TokenRequest and the token cache) on every Kubernetes version the
// test bed builds, one version after another, each on a real node of its own version (kubelet and kube-proxy), and
// writes a results table: test-results/compat.json and the table in docs/compatibility.md. Each version's control
// plane and node are built (and cached) first; their build times are reported.
// Not part of .ci/run (which tests the default version only): on 2 cores a version's build is 10-20 min cold and its
// tests about 15 min.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CONTROL_PLANE_VERSIONS,
  ensureControlPlaneBinaries,
  ensureNodeBinaries,
  KUBERNETES_VERSION_ENV,
  KUBERNETES_VERSIONS,
  nodeVersionFor,
  resolveKubernetesVersion,
} from '@baton/testenv';

/** The tests each version must pass (the issue's list: the write-window test is in confinement.test.ts). */
export const COMPAT_TESTS = [
  'test/integration/handoff/happy-path.test.ts',
  'test/integration/handoff/confinement.test.ts',
  'test/integration/handoff/every-path.test.ts',
  'test/integration/gitops/flux-handoff.test.ts',
] as const;

const root = new URL('..', import.meta.url).pathname;
const outDir = join(root, 'test-results', 'compat');
const say = (line: string) => process.stderr.write(`[compat] ${line}\n`);

interface Metrics {
  readonly test: string;
  readonly liveSeconds: number | null;
  readonly writeWindowSeconds: number | null;
  readonly policyBytes: number | null;
}

interface VersionResult {
  readonly kubernetes: string;
  /** When this version's tests finished. */
  readonly ranAt: string;
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly failedTests: readonly string[];
  readonly buildSeconds: number | null;
  readonly built: boolean;
  /** The kubelet and kube-proxy version of the node the tests ran on, and its build (null when not built). */
  readonly node?: { readonly kubelet: string; readonly buildSeconds: number; readonly built: boolean } | null;
  readonly testSeconds: number;
  readonly handoffs: readonly Metrics[];
  readonly error?: string;
}

const requested = process.argv.slice(2).filter((a) => a !== '--');
const versions = requested.length ? requested.map((v) => resolveKubernetesVersion(v)) : [...KUBERNETES_VERSIONS];
mkdirSync(outDir, { recursive: true });

const results: VersionResult[] = [];
for (const version of versions) {
  const r = await runVersion(version);
  results.push(r);
  writeFileSync(join(outDir, `${version}.result.json`), `${JSON.stringify(r, null, 2)}\n`);
}

// The table keeps the last result of every version (a run of one version leaves the others' rows as they were).
const all = KUBERNETES_VERSIONS.map((v) => join(outDir, `${v}.result.json`))
  .filter((f) => existsSync(f))
  .map((f) => JSON.parse(readFileSync(f, 'utf8')) as VersionResult);
const report = { default: CONTROL_PLANE_VERSIONS.kubernetes, tests: COMPAT_TESTS, results: all };
writeFileSync(join(root, 'test-results', 'compat.json'), `${JSON.stringify(report, null, 2)}\n`);
const table = markdownTable(all);
updateDoc(all);
process.stdout.write(`${table}\n`);
process.exit(results.every((r) => r.failed === 0 && r.passed > 0 && !r.error) ? 0 : 1);

async function runVersion(version: string): Promise<VersionResult> {
  say(`Kubernetes ${version}: building or reusing its control plane`);
  let buildSeconds: number | null = null;
  let built = false;
  try {
    const bins = await ensureControlPlaneBinaries({ kubernetesVersion: version, onProgress: say });
    const kube = bins.builds.find((b) => b.name === 'kube')!;
    buildSeconds = kube.buildSeconds;
    built = kube.built;
  } catch (err) {
    return empty(version, `build failed: ${(err as Error).message.split('\n')[0]}`);
  }
  let node: VersionResult['node'] = null;
  try {
    const kubelet = nodeVersionFor(version);
    if (!kubelet) return empty(version, 'the test bed builds no kubelet for this version');
    const bins = await ensureNodeBinaries({ kubernetesVersion: kubelet, onProgress: say });
    const build = bins.builds.find((b) => b.name === 'kube-node')!;
    node = { kubelet, buildSeconds: build.buildSeconds, built: build.built };
  } catch (err) {
    return empty(version, `node build failed: ${(err as Error).message.split('\n')[0]}`);
  }
  const metricsPath = join(outDir, `${version}.metrics.jsonl`);
  const reportPath = join(outDir, `${version}.vitest.json`);
  rmSync(metricsPath, { force: true });
  rmSync(reportPath, { force: true });
  say(`Kubernetes ${version}: running ${COMPAT_TESTS.length} test files`);
  const started = performance.now();
  const code = await run(
    'pnpm',
    [
      'exec',
      'vitest',
      'run',
      '--maxWorkers=1',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${reportPath}`,
      ...COMPAT_TESTS,
    ],
    { ...process.env, [KUBERNETES_VERSION_ENV]: version, BATON_COMPAT_METRICS: metricsPath },
  );
  const testSeconds = Math.round((performance.now() - started) / 1000);
  if (!existsSync(reportPath)) return { ...empty(version, `vitest exited ${code} without a report`), testSeconds };
  const r = JSON.parse(readFileSync(reportPath, 'utf8')) as VitestReport;
  const failedTests = r.testResults.flatMap((f) =>
    f.assertionResults.filter((a) => a.status === 'failed').map((a) => `${f.name.replace(root, '')}: ${a.title}`),
  );
  const brokenFiles = r.testResults.filter(
    (f) => f.status === 'failed' && !f.assertionResults.some((a) => a.status === 'failed'),
  );
  const handoffs = existsSync(metricsPath)
    ? readFileSync(metricsPath, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Metrics)
    : [];
  return {
    kubernetes: version,
    ranAt: new Date().toISOString(),
    passed: r.numPassedTests,
    failed: r.numFailedTests + brokenFiles.length,
    skipped: r.numPendingTests + r.numTodoTests,
    failedTests: [...failedTests, ...brokenFiles.map((f) => `${f.name.replace(root, '')}: did not load or run`)],
    buildSeconds,
    built,
    node,
    testSeconds,
    handoffs,
  };
}

interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: { name: string; status: string; assertionResults: { title: string; status: string }[] }[];
}

function empty(version: string, error: string): VersionResult {
  say(`Kubernetes ${version}: ${error}`);
  return {
    kubernetes: version,
    ranAt: new Date().toISOString(),
    passed: 0,
    failed: 0,
    skipped: 0,
    failedTests: [],
    buildSeconds: null,
    built: false,
    testSeconds: 0,
    handoffs: [],
    error,
  };
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn('nice', ['-n', '10', cmd, ...args], { cwd: root, env, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (c) => resolve(c));
  });
}

function cell(m: Metrics | undefined, key: 'liveSeconds' | 'writeWindowSeconds' | 'policyBytes'): string {
  const v = m?.[key];
  return v === null || v === undefined ? '–' : String(v);
}

/** One row per version: result, then the live/write windows and policy size of the happy-path and Flux handoffs. */
function markdownTable(rs: readonly VersionResult[]): string {
  const rows = rs.map((r) => {
    const happy = r.handoffs.find((h) => h.test === 'happy-path');
    const flux = r.handoffs.find((h) => h.test === 'flux');
    const result = r.error
      ? `not run: ${r.error}`
      : r.failed
        ? `**fail** (${r.passed} passed, ${r.failed} failed)`
        : `pass (${r.passed})`;
    const node = r.node ? `real, kubelet ${r.node.kubelet.slice(1)}` : 'kwok';
    return `| ${r.kubernetes.slice(1)}${r.kubernetes === CONTROL_PLANE_VERSIONS.kubernetes ? ' (default)' : ''} | ${r.ranAt.slice(0, 16).replace('T', ' ')} UTC | ${node} | ${result} | ${cell(happy, 'liveSeconds')} / ${cell(happy, 'writeWindowSeconds')} | ${cell(happy, 'policyBytes')} | ${cell(flux, 'liveSeconds')} / ${cell(flux, 'writeWindowSeconds')} | ${cell(flux, 'policyBytes')} | ${r.buildSeconds ?? '–'}${r.built ? '' : ' (cached)'} | ${r.node ? `${r.node.buildSeconds}${r.node.built ? '' : ' (cached)'}` : '–'} | ${r.testSeconds} |`;
  });
  return [
    '| Kubernetes | last run | node | result | handoff live / write window (s) | policy (bytes) | Flux live / write window (s) | Flux policy (bytes) | control plane build (s) | node build (s) | tests (s) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    ...rs.flatMap((r) => r.failedTests.map((t) => `- ${r.kubernetes}: ${t}`)),
  ].join('\n');
}

/**
 * Rewrites the table between the markers in docs/compatibility.md: the rows of the versions with results here,
 * and the rows already there of every other version (a run on one machine need not repeat the others).
 */
function updateDoc(rs: readonly VersionResult[]): void {
  const path = join(root, 'docs', 'compatibility.md');
  if (!existsSync(path)) return;
  const doc = readFileSync(path, 'utf8');
  const begin = '<!-- compat:begin -->';
  const end = '<!-- compat:end -->';
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  if (a < 0 || b < a) return;
  const fresh = markdownTable(rs).split('\n');
  const have = new Set(rs.map((r) => r.kubernetes.slice(1)));
  const old = doc
    .slice(a + begin.length, b)
    .split('\n')
    .filter((l) => /^\| 1\.\d+\.\d+/.test(l) || /^- v1\./.test(l))
    .filter((l) => !have.has(/^(?:\| |- v)(1\.\d+\.\d+)/.exec(l)![1]!));
  const rows = [...fresh.slice(2).filter((l) => l.startsWith('|')), ...old.filter((l) => l.startsWith('|'))].sort();
  const notes = [...fresh.filter((l) => l.startsWith('- ')), ...old.filter((l) => l.startsWith('- '))];
  writeFileSync(
    path,
    `${doc.slice(0, a + begin.length)}\n${[...fresh.slice(0, 2), ...rows, ...notes].join('\n')}\n${doc.slice(b)}`,
  );
}
