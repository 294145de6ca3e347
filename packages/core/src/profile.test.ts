import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseProfile, profileJsonSchema, pushOnlyReason, revisionMatches, revisionRuleGaps } from './profile.js';

const flux = parseProfile(
  {
    name: 'flux',
    namespace: 'flux-system',
    revision: {
      object: { apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', name: 'flux-system' },
      path: 'status.lastAppliedRevision',
      format: '{ref}@sha1:{commit}',
      conditions: [{ conditionType: 'Ready' }],
    },
    pushOnly: [{ kind: 'CustomResourceDefinition', reason: 'API definitions stay push-only' }],
  },
  'flux/rules/profile.yaml',
);
const commit = 'a3f1c2d4e5b60718293a4b5c6d7e8f9012a3b4c5';

describe('profile revision rules', () => {
  it('matches Flux’s `<ref>@sha1:<commit>` exactly: not another ref, not a bare suffix', () => {
    expect(revisionMatches(flux.revision, `main@sha1:${commit}`, commit, 'main')).toBe(true);
    expect(revisionMatches(flux.revision, `dev/main@sha1:${commit}`, commit, 'main')).toBe(false);
    expect(revisionMatches(flux.revision, commit, commit, 'main')).toBe(false);
  });

  it('says what is missing: the revision, and a condition with the controller’s own message', () => {
    const obj = {
      status: {
        lastAppliedRevision: `main@sha1:${'b'.repeat(40)}`,
        conditions: [{ type: 'Ready', status: 'False', message: 'authentication required' }],
      },
    };
    const { observed, gaps } = revisionRuleGaps(flux.revision, obj, commit, 'main');
    expect(observed).toBe(`main@sha1:${'b'.repeat(40)}`);
    expect(gaps).toEqual([
      {
        rule: 'revision',
        message: `status.lastAppliedRevision is "main@sha1:${'b'.repeat(40)}", expected main@sha1:${commit}`,
      },
      { rule: 'condition', message: 'condition Ready is False, expected True (authentication required)' },
    ]);
    expect(revisionRuleGaps(flux.revision, undefined, commit, 'main').gaps).toEqual([
      { rule: 'revision', message: 'does not exist' },
    ]);
  });

  it('lists push-only kinds with their reason', () => {
    expect(pushOnlyReason(flux, 'CustomResourceDefinition', 'x')).toBe('API definitions stay push-only');
    expect(pushOnlyReason(flux, 'Deployment', 'x')).toBeUndefined();
  });

  it('refuses a condition rule that sets both or neither of path and conditionType, naming the file', () => {
    expect(() =>
      parseProfile(
        {
          name: 'x',
          namespace: 'n',
          revision: { object: { apiVersion: 'v1', kind: 'K', name: 'a' }, path: 'p', conditions: [{}] },
        },
        'x/rules/profile.yaml',
      ),
    ).toThrow(/x\/rules\/profile\.yaml: invalid profile: .*exactly one of path or conditionType/);
  });
});

describe('profile JSON Schema', () => {
  it('keeps schemas/profile.schema.json in step with the zod schema (run `pnpm --filter @baton/core schemas`)', () => {
    expect(readFileSync(new URL('../schemas/profile.schema.json', import.meta.url), 'utf8')).toBe(
      `${JSON.stringify(profileJsonSchema(), null, 2)}\n`,
    );
  });
});

describe('revisionRuleGaps: quoting the controller', () => {
  it('quotes Argo CD’s condition messages and last operation while the rule does not hold, and nothing once it does', () => {
    const rule = parseProfile(
      {
        name: 'argocd',
        namespace: 'argocd',
        revision: {
          object: { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', namespace: 'argocd', name: 'root' },
          path: 'status.sync.revision',
          conditions: [{ path: 'status.sync.status', equals: 'Synced' }],
          quote: ['status.conditions', 'status.operationState.message'],
        },
      },
      'argocd/rules/profile.yaml',
    ).revision;
    const failing = {
      status: {
        sync: { status: 'Unknown' },
        conditions: [{ type: 'ComparisonError', message: 'authentication required: Invalid username or password' }],
        operationState: { message: 'one or more synchronization tasks are not valid' },
      },
    };
    const { gaps } = revisionRuleGaps(rule, failing, 'c0ffee', 'main');
    expect(gaps.at(-1)?.message).toBe(
      'reports: ComparisonError: authentication required: Invalid username or password; one or more synchronization tasks are not valid',
    );
    const ok = { status: { sync: { status: 'Synced', revision: 'c0ffee' }, conditions: failing.status.conditions } };
    expect(revisionRuleGaps(rule, ok, 'c0ffee', 'main').gaps).toEqual([]);
  });
});
