import { Command } from '@commander-js/extra-typings';

/** `baton testenv …`: the real local control plane. */
export function testenvCommand(): Command {
  return new Command('testenv').description('start, list and stop real local Kubernetes control planes');
}
