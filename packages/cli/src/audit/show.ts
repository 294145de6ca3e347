import { readEntries } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { Command, Option } from '@commander-js/extra-typings';
import { stringify } from 'yaml';
import { print, say } from './cli-io.js';

/** `baton audit show`: one entry in full, envelope and decoded statement. */
export function showCommand() {
  return new Command('show')
    .description('show one handoff in full: the CloudEvent envelope and the signed in-toto statement, decoded')
    .argument('<log>', 'audit log (.jsonl)')
    .argument('<ref>', 'entry index (0-based) or run id')
    .addOption(
      new Option('-o, --output <format>', 'output format').choices(['yaml', 'json'] as const).default('yaml' as const),
    )
    .action(async (log, ref, o) => {
      const byIndex = /^\d+$/.test(ref) ? Number(ref) : undefined;
      for await (const d of readEntries(log)) {
        if (byIndex !== undefined ? d.index !== byIndex : d.entry.id !== ref) continue;
        const { data, ...envelope } = d.entry;
        const shown = {
          index: d.index,
          line: d.index + 1,
          event: envelope,
          signatures: data.signatures.map((s) => s.keyid),
          statement: d.statement,
        };
        print(
          o.output === 'json' ? JSON.stringify(shown, null, 2) : stringify(shown, { version: '1.1', lineWidth: 0 }),
        );
        say('decoded, not verified: run `baton audit verify` (whole log) or `baton audit prove` (this entry)');
        return;
      }
      throw new ConfigError(
        `${log}: no entry ${byIndex !== undefined ? `with index ${byIndex}` : `with run id "${ref}"`}; \`baton audit ls ${log}\` lists them`,
      );
    });
}
