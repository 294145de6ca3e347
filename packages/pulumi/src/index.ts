// The public API of @baton/pulumi. The dynamic provider lives behind `@baton/pulumi/provider`.
export type { BatonControllerOptions, ControllerOptions } from './controllers.js';
export { argocd, batonController, controllerOf, controllers, flux } from './controllers.js';
export type { HandoffArgs } from './handoff.js';
export { formatPreview, Handoff } from './handoff.js';
export type {
  AuditSpec,
  ControllerSpec,
  ControllerStatus,
  GitSource,
  HandoffInputs,
  ImageTrustSpec,
  KeylessSpec,
} from './handoff-inputs.js';
export type { AuditReceipt, CredentialReceipt, HandoffReceipt } from './handoff-receipt.js';
export type { HandoffStackOutputs } from './stack-config.js';
export { handoffFromConfig, STACK_CONFIG_KEYS } from './stack-config.js';
