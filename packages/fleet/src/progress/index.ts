// @baton/fleet/progress: the step view shared by `baton up`, the demo and each fleet row, and the fleet's live view.
export type { FleetView, FleetViewOptions } from './fleet-view.js';
export { budgetText, clusterLine, createFleetView } from './fleet-view.js';
export { planFacts } from './plan-facts.js';
export type { RunLog, RunLogOptions } from './run-log.js';
export { createRunLog } from './run-log.js';
export type { LogRecord, PlanFacts, StepState } from './step-tracker.js';
export { formatDuration, formatStep, STEP_ORDER, StepTracker } from './step-tracker.js';
export type { StepView, StepViewOptions } from './step-view.js';
export { createStepView } from './step-view.js';
