import { Command } from '@commander-js/extra-typings';
import { fleetShardCommand } from './shard.js';
import { fleetUpCommand } from './up.js';

/** `baton fleet …`: hand off many clusters in waves, with a failure budget, in-process or as Kubernetes Jobs. */
export function fleetCommand(): Command {
  const cmd = new Command('fleet').description(
    'hand off many clusters in waves with a failure budget, in-process or as Indexed Jobs on a management cluster',
  );
  const subs = [fleetUpCommand(), fleetShardCommand()];
  for (const sub of subs) cmd.addCommand(sub);
  return cmd;
}
