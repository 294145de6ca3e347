// Test helpers of @baton/core (`@baton/core/testing`): never exported from the production index.
export type { FakeClock } from './fake-clock.js';
export { createFakeClock, createSettlingFakeClock } from './fake-clock.js';
export { fakeHandoffDeps } from './handoff/fake-deps.js';
