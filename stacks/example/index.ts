// Entry point for `pulumi up` in this directory (needs pulumi-language-nodejs); tests run exampleProgram inline.
import { exampleProgram } from './program.js';

export default exampleProgram;
