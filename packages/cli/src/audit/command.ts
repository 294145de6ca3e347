import { Command } from '@commander-js/extra-typings';
import { keygenCommand } from './keygen.js';
import { lsCommand } from './ls.js';
import { proveCommand, verifyProofCommand } from './prove.js';
import { reportCommand } from './report.js';
import { showCommand } from './show.js';
import { synthCommand } from './synth.js';
import { verifyCommand } from './verify.js';

/** `baton audit …`: create keys, review, verify and prove the signed handoff audit log. */
export function auditCommand(): Command {
  const cmd = new Command('audit').description('review, verify and prove the signed, tamper-evident handoff audit log');
  const subs = [
    keygenCommand(),
    lsCommand(),
    showCommand(),
    verifyCommand(),
    proveCommand(),
    verifyProofCommand(),
    reportCommand(),
    synthCommand(),
  ];
  for (const sub of subs) cmd.addCommand(sub);
  return cmd;
}
