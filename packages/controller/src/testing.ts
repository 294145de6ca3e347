// Test helpers of @baton/controller (`@baton/controller/testing`): never exported from the production index.
export { simulateReconciledStatus } from './profile-testing.js';
