/** Label every bootstrap object carries, so leftovers of a killed run can be found. */
export const BOOTSTRAP_COMPONENT_LABEL = 'baton.dev/component';
/** Value of {@link BOOTSTRAP_COMPONENT_LABEL} on bootstrap objects. */
export const BOOTSTRAP_COMPONENT = 'bootstrap-credential';
/** Label with the run id. */
export const RUN_ID_LABEL = 'baton.dev/run-id';
