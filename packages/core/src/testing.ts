// Test helpers of @baton/core (`@baton/core/testing`): never exported from the production index.
export type { FakeClock } from './fake-clock.js';
export { createFakeClock } from './fake-clock.js';
