// @baton/terminal: what a person reads in a terminal — tables and key: value lines that fit the screen (kubectl's
// conventions), relative ages, and -o table|wide|json|yaml. The CLI and the test bed's command print through it.
export { ageOf, humanDuration, isTimestamp } from './age.js';
export type { Field } from './fields.js';
export { renderFields } from './fields.js';
export type { OutputFormat } from './output.js';
export { OUTPUT_FORMATS, renderObject, renderRows, words } from './output.js';
export type { Screen, ScreenStream } from './screen.js';
export { DEFAULT_WIDTH, screenOf } from './screen.js';
export { ELLIPSIS, oneLine, shorten } from './shorten.js';
export type { Column } from './table.js';
export { renderTable, widestLine } from './table.js';
