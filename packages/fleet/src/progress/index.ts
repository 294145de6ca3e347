// @baton/fleet/progress: the fleet's live view; each cluster's row is `@baton/progress`'s step view.
export type { FleetView, FleetViewOptions } from './fleet-view.js';
export { budgetText, clusterLine, createFleetView } from './fleet-view.js';
