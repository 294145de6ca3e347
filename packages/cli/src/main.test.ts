import { readFileSync } from 'node:fs';
import type { CommanderError } from '@commander-js/extra-typings';
import { describe, expect, it } from 'vitest';
import { buildProgram, NOUNS, withoutColorFlag } from './main.js';

describe('baton program', () => {
  it('shows each noun in top-level help with the same summary its real command has', async () => {
    const full = await buildProgram();
    for (const [name, noun] of Object.entries(NOUNS)) {
      const real = full.commands.find((c) => c.name() === name);
      expect(real?.description()).toBe(noun.summary);
    }
    // Loading every noun (the Kubernetes client, the audit log, the fleet's views) takes seconds on a loaded machine.
  }, 30_000);

  it('loads only the noun that runs', async () => {
    const program = await buildProgram(['audit', 'verify']);
    const audit = program.commands.find((c) => c.name() === 'audit');
    const up = program.commands.find((c) => c.name() === 'up');
    expect(audit?.commands.length).toBeGreaterThan(0);
    expect(up?.options.length).toBe(0);
  });
});

describe('baton --version', () => {
  it("prints @baton/cli's version from its package.json and exits 0", async () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    let printed = '';
    const program = await buildProgram(['--version']);
    program.configureOutput({ writeOut: (s) => (printed += s) });
    const exit = await program.parseAsync(['--version'], { from: 'user' }).then(
      () => undefined,
      (err: CommanderError) => err.exitCode,
    );
    expect(exit).toBe(0);
    expect(printed).toBe(`${pkg.version}\n`);
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('baton --no-color', () => {
  it('is taken anywhere before `--` and sets NO_COLOR for every view', () => {
    const env: NodeJS.ProcessEnv = {};
    expect(withoutColorFlag(['audit', 'ls', 'log.jsonl', '--no-color'], env)).toEqual(['audit', 'ls', 'log.jsonl']);
    expect(env.NO_COLOR).toBe('1');
    const untouched: NodeJS.ProcessEnv = {};
    expect(withoutColorFlag(['fleet', 'shard', '--', '--no-color'], untouched)).toEqual([
      'fleet',
      'shard',
      '--',
      '--no-color',
    ]);
    expect(untouched.NO_COLOR).toBeUndefined();
  });
});

describe('a usage error in any command', () => {
  it('reaches run() as a CommanderError (exit 2), from every command of every noun, not process.exit(1)', async () => {
    const program = await buildProgram();
    const all: (typeof program.commands)[number][] = [];
    const walk = (c: (typeof program.commands)[number]) => {
      all.push(c);
      c.commands.forEach(walk);
    };
    program.commands.forEach(walk);
    // testenv's nouns nest two deep (testenv up); audit and fleet one.
    expect(all.map((c) => c.name())).toEqual(expect.arrayContaining(['testenv', 'up', 'audit', 'verify', 'fleet']));
    for (const c of all) {
      c.configureOutput({ writeErr: () => {}, writeOut: () => {} });
      // Commander only throws here when exitOverride is set; without it, it calls process.exit.
      const thrown = (() => {
        try {
          c.error('probe', { exitCode: 1, code: 'probe' });
        } catch (err) {
          return err as CommanderError;
        }
        return undefined;
      })();
      expect(thrown?.code, `baton … ${c.name()}`).toBe('probe');
    }
  }, 30_000);
});
