import { describe, expect, it } from 'vitest';
import type { KubeClients } from './kube-clients.js';
import { diffEffectiveRules } from './rules-review.js';

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

/** A credential whose SelfSubjectRulesReview answers `rules` in every namespace. */
const holding = (rules: Rule[]) =>
  ({
    authz: { createSelfSubjectRulesReview: async () => ({ status: { resourceRules: rules, incomplete: false } }) },
  }) as unknown as KubeClients;

const planned: Rule = { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['cfg'] };
const expected = { cluster: [], namespaced: { apps: [{ ...planned, namespace: 'apps' }] } };
const selfReviews: Rule = {
  apiGroups: ['authorization.k8s.io'],
  resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
  verbs: ['create'],
};
// What Kubernetes 1.37's default policy binds to system:serviceaccounts (system:cluster-trust-bundle-discovery).
const trustBundleReads: Rule = {
  apiGroups: ['certificates.k8s.io'],
  resources: ['clustertrustbundles'],
  verbs: ['get', 'list', 'watch'],
};

describe('diffEffectiveRules', () => {
  it('counts what the API server grants every ServiceAccount (self reviews; 1.37 trust-bundle reads) as no extra', async () => {
    const diffs = await diffEffectiveRules(holding([planned, selfReviews, trustBundleReads]), expected);
    expect(diffs).toEqual([{ namespace: 'apps', extra: [], missing: [], isIncomplete: false }]);
  });

  it('still reports a write to ClusterTrustBundles, or any other grant, as extra', async () => {
    const write: Rule = { apiGroups: ['certificates.k8s.io'], resources: ['clustertrustbundles'], verbs: ['create'] };
    const secrets: Rule = { apiGroups: [''], resources: ['secrets'], verbs: ['list'] };
    const [d] = await diffEffectiveRules(holding([planned, trustBundleReads, write, secrets]), expected);
    expect(d!.extra).toEqual(['certificates.k8s.io|clustertrustbundles|create|*', '|secrets|list|*']);
  });

  it('reports a planned rule the credential lacks as missing', async () => {
    const [d] = await diffEffectiveRules(holding([trustBundleReads]), expected);
    expect(d!.missing).toEqual(['|configmaps|get|cfg']);
  });
});
