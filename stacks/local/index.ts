// Entry point of `pulumi up` in this directory; tests may run localProgram inline.
import { localProgram } from './program.js';

export default localProgram;
