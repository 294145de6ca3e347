// @baton/kube/plan: what computes a push plan without a cluster (objects, the credential's rules, the
// confinement). Nothing here loads @kubernetes/client-node, so a Pulumi program or a dry run stays light.
export { bootstrapName } from './bootstrap-identity.js';
export type { ConfinedObject, Confinement, ConfinementSpec } from './confinement-policy.js';
export { planConfinement } from './confinement-policy.js';
export { writableView } from './expected-objects.js';
export type { KindInfo, KubeObject } from './kube-object.js';
export { describeObject, INSTALL_KINDS, kindsFromCrds } from './kube-object.js';
export type { BootstrapRules, RbacRule } from './rbac-rules.js';
export { computeBootstrapRules, flattenRules } from './rbac-rules.js';
