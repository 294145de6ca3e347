// @baton/core/plan: read a handoff plan and compute what its handoff would push, without a cluster. It loads no
// Kubernetes client, so the Pulumi program and the dynamic provider's check stay light (`pnpm bench:pulumi`).
export type { HandoffPlan, HandoffPlanInput, LoadedPlan } from './handoff-plan.js';
export { HandoffPlanSchema, loadHandoffPlan, parseHandoffPlan } from './handoff-plan.js';
export type { HandoffPreview } from './preview.js';
export { previewHandoff } from './preview.js';
