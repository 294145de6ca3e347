export { runTestenvCli, testenvCommand } from './testenv-command.js';
