// @baton/testenv/pulumi: the Pulumi engine built from Go modules and an offline environment to run `pulumi up` in.
// --- Pulumi engine and offline environment (issue 3) ---
export type { EnsurePulumiEngineOptions, PulumiEngine } from './pulumi/engine.js';
export { ensurePulumiEngine, PULUMI_VERSIONS } from './pulumi/engine.js';
export type { PulumiEnv, PulumiEnvOptions, PulumiRunOptions, PulumiRunResult } from './pulumi/pulumi-env.js';
export { createPulumiEnv } from './pulumi/pulumi-env.js';
export type { PulumiErrorContext } from './pulumi/pulumi-error.js';
export { explainPulumiError } from './pulumi/pulumi-error.js';
