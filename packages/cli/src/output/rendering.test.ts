// What each command prints for a person, at 80 and 130 columns (issue 32): no line wider than the screen, headers as
// words, every field in -o wide, and json/yaml exactly the data (what scripts read).
import type { HandoffSummary } from '@baton/core';
import { widestLine as longest, renderFields, renderRows, renderTable } from '@baton/terminal';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { entryColumns } from '../audit/ls.js';
import { FLEET_COLUMNS } from '../fleet/up.js';
import { formatPlanReport, type PlanReport } from '../plan/command.js';
import { leftoverColumns } from '../revoke/command.js';
import { receiptFields } from '../status/command.js';
import { summaryFields } from '../up/summary-fields.js';

const NOW = Date.parse('2026-12-05T10:00:00Z');
const IDENTITY = 'system:serviceaccount:baton-system:baton-bootstrap-20261205094500-3f9a1c';
const FINGERPRINT = `sha256:${'7c4e19ab'.repeat(8)}`;

const summary: HandoffSummary = {
  runId: '20261205094500-3f9a1c',
  outcome: 'handed-off',
  cluster: { name: 'prod-eu-1', server: 'https://prod-eu-1.k8s.acme.example:6443' },
  revision: `main@sha1:${'e'.repeat(40)}`,
  credential: {
    subject: IDENTITY,
    fingerprint: FINGERPRINT,
    jti: 'jti-1',
    issuedAt: '2026-12-05T09:45:01.000Z',
    expiresAt: '2026-12-05T09:55:01.000Z',
    revokedAt: '2026-12-05T09:45:19.000Z',
    secretDeletedAt: '2026-12-05T09:45:09.000Z',
    liveSeconds: 18.2,
    rules: [],
  },
  totalSeconds: 21.4,
  leftoversRemoved: [],
  stepDurationsMs: {},
  proof: {
    probeStatus: 401,
    tokenReviewAuthenticated: false,
    provedAt: '2026-12-05T09:45:20.000Z',
  } as NonNullable<HandoffSummary['proof']>,
  audit: {
    index: 41,
    eventId: '20261205094500-3f9a1c',
    eventDigest: `sha256:${'1'.repeat(64)}`,
    checkpoint: 'checkpoint',
    checkpointPath: '/home/platform/clusters/prod-eu-1/audit/checkpoint',
    logPath: '/home/platform/clusters/prod-eu-1/audit/handoffs.jsonl',
  },
};

const receipt = {
  runId: summary.runId,
  outcome: 'handed-off',
  revision: summary.revision,
  recordedAt: '2026-12-05T09:45:21.000Z',
  credentialFingerprint: FINGERPRINT,
  auditEventId: summary.runId,
  auditEventDigest: `sha256:${'1'.repeat(64)}`,
  auditLogIndex: '41',
  auditCheckpoint: 'test.baton.dev/audit\n42\nroot\n\n— baton sig',
};

const entries = [0, 1, 2].map((i) => ({
  index: 40 + i,
  finishedAt: `2026-12-05T0${7 + i}:45:21.000Z`,
  cluster: i === 1 ? 'edge-store-0042-berlin-mitte' : 'prod-eu-1',
  outcome: i === 1 ? 'failed' : 'handed-off',
  failedStep: i === 1 ? 'takeover' : '',
  actor: i === 2 ? 'kubernetes-admin' : IDENTITY,
  via: 'cli',
  liveSeconds: i === 1 ? null : 18.2,
  runId: `2026120509450${i}-3f9a1c`,
}));

const fleetRows = [
  {
    wave: '1 canary',
    cluster: 'edge-store-0042-berlin-mitte',
    status: 'failed',
    attempts: 2,
    seconds: '41.7',
    detail:
      'takeover: the controller did not reach main@sha1:eeee within 300 s: GitSync baton-system/baton-controller condition Ready=False (FetchFailed: repository not found)',
  },
  { wave: '2 rest', cluster: 'prod-eu-1', status: 'handed-off', attempts: 1, seconds: '22.0', detail: FINGERPRINT },
];

const leftovers = [
  {
    runId: summary.runId,
    name: 'baton-bootstrap-20261205094500-3f9a1c',
    deleted: 4,
    secretDeletedAt: summary.credential!.secretDeletedAt,
  },
];

const POLICY = 'baton-bootstrap-<run-id>';
const REFUSAL =
  'admission webhook "validate.kyverno.svc" denied the request: Deployment baton-system/baton-controller must set resources.limits.memory; add it to the manifest or exempt the namespace';
const CONTROLLER_IMAGE = `ghcr.io/baton-dev/baton-controller@sha256:${'d'.repeat(64)}`;
const RELEASE_KEY = 'baton.dev/release+5425b7f2+AX7umy3JCO2HaN8tsqc1w1sKUf6eTkVQdYKXZYeE5CH3';
const planReport: PlanReport = {
  plan: '/home/platform/clusters/prod-eu-1/handoff.yaml',
  profile: 'baton-controller',
  preview: {
    objects: [
      'Namespace/baton-system',
      'CustomResourceDefinition/gitsyncs.baton.dev',
      'ServiceAccount/baton-system/baton-controller',
      'Secret/baton-system/baton-git-credentials',
      'Deployment/baton-system/baton-controller',
    ],
    pushOnly: ['Secret/baton-system/baton-git-credentials'],
    planDigest: `sha256:${'9'.repeat(64)}`,
    rules: [
      { verbs: ['create', 'patch'], apiGroups: [''], resources: ['namespaces'], resourceNames: ['baton-system'] },
      {
        verbs: ['create', 'get', 'patch'],
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: ['gitsyncs.baton.dev'],
      },
      {
        verbs: ['create', 'get', 'patch'],
        apiGroups: ['apps'],
        resources: ['deployments'],
        resourceNames: ['baton-controller'],
        namespace: 'baton-system',
      },
    ],
    confinement: {
      policyName: POLICY,
      subject: 'system:serviceaccount:baton-system:baton-bootstrap-<run-id>',
      fieldManager: 'baton-bootstrap',
      allowed: [],
      validationCount: 14,
      policyBytes: 18_342,
      content:
        'each planned object pinned to its digest (spec, labels, annotations, owner references); no delete, no subresource, no other object',
    },
  } as PlanReport['preview'],
  images: {
    verification: 'verified',
    policy: 'profile baton-controller (/home/platform/push/rules/profile.yaml): imageTrust',
    images: [CONTROLLER_IMAGE],
    verified: [
      {
        image: CONTROLLER_IMAGE,
        digest: CONTROLLER_IMAGE.split('@')[1]!,
        signature: `sha256:${'e'.repeat(64)}`,
        signedBy: RELEASE_KEY,
      },
    ],
  },
  cluster: {
    version: 'v1.36.3',
    operator: 'kubernetes-admin',
    refusals: [],
    notes: ['creates namespace baton-system first'],
    dryRun: [
      { object: 'Namespace/baton-system', result: 'ok' },
      {
        object: 'CustomResourceDefinition/gitsyncs.baton.dev',
        result: 'deferred',
        message: 'GitSync is defined by a CRD of the set: served once the push applies it',
      },
      { object: 'Deployment/baton-system/baton-controller', result: 'refused', message: REFUSAL },
    ],
  },
};

describe.each([80, 130])('at %i columns', (width) => {
  it('baton up: the summary as key: value lines that fit, every value whole in -o wide', () => {
    const out = renderFields(summaryFields(summary), { width });
    expect(longest(out)).toBeLessThanOrEqual(width);
    expect(out).toMatch(/^outcome: +handed-off\n/);
    expect(out).toMatch(/\ncredential live seconds: +18\.2\n/);
    const wide = renderFields(summaryFields(summary), { width, wide: true });
    expect(wide).toContain(IDENTITY);
    expect(wide).toContain(FINGERPRINT);
  });

  it('baton status: keys as words, times as ages; the time itself in -o wide', () => {
    const out = renderFields(receiptFields(receipt, NOW, false), { width });
    expect(longest(out)).toBeLessThanOrEqual(width);
    expect(out).toMatch(/^run id: +20261205094500-3f9a1c$/m);
    expect(out).toMatch(/^recorded at: +14m ago$/m);
    expect(out).not.toMatch(/[a-z][A-Z]/);
    expect(out).not.toContain('checkpoint');
    const wide = renderFields(receiptFields(receipt, NOW, true), { width, wide: true });
    expect(wide).toMatch(/^recorded at: +2026-12-05T09:45:21\.000Z$/m);
    expect(wide).toContain(FINGERPRINT);
  });

  it('baton audit ls: an AGE column, multi-word headers, whole values in -o wide', () => {
    const out = renderRows(entries, 'table', entryColumns(NOW), { width });
    expect(longest(out)).toBeLessThanOrEqual(width);
    expect(out.split('\n')[0]).toMatch(/^INDEX {3}AGE {3,}CLUSTER {3,}OUTCOME {3,}FAILED STEP {3,}/);
    // The actor and the run id where they fit: not at 80 columns, shortened at 130.
    expect(out.split('\n')[0]?.includes('ACTOR')).toBe(width > 80);
    expect(out).toMatch(/\n40 {6}134m {3}prod-eu-1 /);
    const wide = renderRows(entries, 'wide', entryColumns(NOW), { width });
    for (const e of entries) for (const v of [e.finishedAt, e.actor, e.runId, e.cluster]) expect(wide).toContain(v);
    expect(wide.split('\n')[0]).toContain('FINISHED AT');
  });

  it('baton fleet up: the error detail cut to the screen, whole in -o wide', () => {
    const out = renderTable(fleetRows, FLEET_COLUMNS, { width });
    expect(longest(out)).toBeLessThanOrEqual(width);
    expect(out).toMatch(/^WAVE +CLUSTER +STATUS +ATTEMPTS +SECONDS +DETAIL$/m);
    expect(renderTable(fleetRows, FLEET_COLUMNS, { width, wide: true })).toContain(fleetRows[0]!.detail);
  });

  it('baton plan: the plan as key: value lines, objects, rules and the dry run as tables; a refusal whole', () => {
    const out = formatPlanReport(planReport, { width });
    expect(longest(out)).toBeLessThanOrEqual(width);
    expect(out).toMatch(/^Plan: +\/home\/platform/);
    expect(out).toMatch(/^OBJECT +PUSH ONLY$/m);
    expect(out).toMatch(/^Secret\/baton-system\/baton-git-credentials +yes \(never in Git\)$/m);
    expect(out).toMatch(/^VERBS +API GROUP +RESOURCES +NAMES +NAMESPACE$/m);
    expect(out).toMatch(/^create,patch +core +/m);
    expect(out).toMatch(/^RESULT +OBJECT +MESSAGE$/m);
    // The refusal's reason and fix are there to read, wrapped, not cut.
    expect(out.replace(/\n +/g, ' ')).toContain(REFUSAL);
    expect(out).toMatch(/baton up would be refused \(see above\)\n$/);
    const wide = formatPlanReport(planReport, { width, wide: true });
    expect(wide).toContain(planReport.preview.planDigest);
    expect(wide).toContain(planReport.preview.confinement.content);
    expect(wide).toMatch(
      /^create,get,patch +apiextensions\.k8s\.io +customresourcedefinitions +gitsyncs\.baton\.dev +\(cluster\)$/m,
    );
    expect(wide).toMatch(/^create,get,patch +apps +deployments +baton-controller +baton-system$/m);
    expect(out).toMatch(/^Images: +1, each signed by a trusted key$/m);
    expect(out.replace(/\n +/g, ' ')).toContain(
      planReport.images.verification === 'verified' ? planReport.images.policy : '?',
    );
    expect(out).toMatch(/^IMAGE +SIGNED BY$/m);
    expect(wide).toContain(`${CONTROLLER_IMAGE}   ${RELEASE_KEY}`);
    const unsigned = `image ${CONTROLLER_IMAGE}: unsigned: https://ghcr.io lists no signature (Sigstore bundle referrer) of ${CONTROLLER_IMAGE.split('@')[1]}; sign it or pass --insecure-skip-image-verify`;
    const refused = formatPlanReport(
      { ...planReport, images: { verification: 'refused', image: CONTROLLER_IMAGE, refused: unsigned } },
      { width },
    );
    expect(longest(refused)).toBeLessThanOrEqual(width);
    expect(refused).toMatch(/^Images: +baton up would refuse them$/m);
    // Whole in -o wide (at a width, a word longer than the screen, here the image's reference, is shortened).
    const refusedWide = formatPlanReport(
      { ...planReport, images: { verification: 'refused', image: CONTROLLER_IMAGE, refused: unsigned } },
      { width, wide: true },
    );
    expect(refusedWide).toContain(unsigned);
    const skipped = formatPlanReport(
      { ...planReport, images: { verification: 'skipped', images: [CONTROLLER_IMAGE], verified: [] } },
      { width },
    );
    expect(skipped).toMatch(/^Images: +1 NOT verified \(--insecure-skip-image-verify\)$/m);
    const REDIS = `docker.io/library/redis@sha256:${'b'.repeat(64)}`;
    const RULE = 'profile argocd (/home/platform/push/rules/profile.yaml): imageTrust.rules[0]';
    const byRule = formatPlanReport(
      {
        ...planReport,
        images: {
          ...planReport.images,
          images: [CONTROLLER_IMAGE, REDIS],
          unsigned: [{ image: REDIS, digest: `sha256:${'b'.repeat(64)}`, reason: 'not signed upstream', rule: RULE }],
        } as PlanReport['images'],
      },
      { width, wide: true },
    );
    expect(byRule).toMatch(/^Images: +2: 1 signed by a trusted key, 1 unsigned as a rule allows$/m);
    expect(byRule.replace(/ {2,}/g, '  ')).toContain(`${REDIS}  unsigned, as ${RULE} allows: not signed upstream`);
    const notAsked = formatPlanReport({ ...planReport, cluster: undefined } as unknown as PlanReport, { width });
    expect(longest(notAsked)).toBeLessThanOrEqual(width);
    expect(notAsked).toMatch(/^Cluster: +not asked/m);
  });

  it('baton revoke: the removed leftovers fit, the deletion as an age', () => {
    const out = renderRows(leftovers, 'table', leftoverColumns(NOW), { width });
    expect(longest(out)).toBeLessThanOrEqual(width);
    expect(out).toMatch(/SECRET DELETED\n/);
    expect(out).toMatch(/ 14m\n$/);
  });
});

describe('json and yaml are the data, as before the renderer', () => {
  it('prints the rows as JSON.stringify(rows, null, 2) and YAML 1.1, whatever the columns', () => {
    expect(renderRows(entries, 'json', entryColumns(NOW), { width: 80 })).toBe(`${JSON.stringify(entries, null, 2)}\n`);
    expect(parse(renderRows(entries, 'yaml', entryColumns(NOW), { width: 40 }))).toEqual(entries);
  });
});
