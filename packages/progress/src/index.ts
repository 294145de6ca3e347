// @baton/progress: the step view of one handoff, shared by `baton up` and each row of the fleet's view
// (`@baton/fleet/progress`), and the run's log that feeds it.
export { planFacts } from './plan-facts.js';
export type { RunLog, RunLogOptions } from './run-log.js';
export { createRunLog } from './run-log.js';
export type { LogRecord, PlanFacts, StepState } from './step-tracker.js';
export { formatDuration, formatStep, STEP_ORDER, StepTracker } from './step-tracker.js';
export type { StepView, StepViewOptions } from './step-view.js';
export { createStepView } from './step-view.js';
