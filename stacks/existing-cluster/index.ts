// Entry point of `pulumi up` in this directory.
import { existingClusterProgram } from './program.js';

export default existingClusterProgram;
