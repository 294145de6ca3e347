// @baton/core/plan: read a handoff plan and compute what its handoff would push, without a cluster. It loads no
// Kubernetes client, so the Pulumi program and the dynamic provider's check stay light (`pnpm bench:pulumi`).
export type { HandoffPlan, LoadedPlan } from './handoff-plan.js';
export { loadHandoffPlan, parseHandoffPlan } from './handoff-plan.js';
export type { HandoffPlanInput } from './plan-schema.js';
export { HandoffPlanSchema } from './plan-schema.js';
export type { HandoffPreview } from './preview.js';
export { previewHandoff } from './preview.js';
