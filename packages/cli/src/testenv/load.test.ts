import { ConfigError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { loadTestenvCommand } from './load.js';

/** What Node throws for `import('@baton/testenv/command')` when the package is not installed. */
function notInstalled(name: string): Error {
  return Object.assign(new Error(`Cannot find package '${name}' imported from /app/node_modules/@baton/cli/dist`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
}

describe('baton testenv without @baton/testenv installed', () => {
  it('fails as a config error naming the package to install', async () => {
    const err = await loadTestenvCommand(() => Promise.reject(notInstalled('@baton/testenv'))).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/the package @baton\/testenv is not installed.*npm install @baton\/testenv/);
  });

  it('passes on any other failure to load, such as a missing dependency of the test bed', async () => {
    const err = await loadTestenvCommand(() => Promise.reject(notInstalled('@peculiar/x509'))).catch((e: Error) => e);
    expect(err).not.toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain("'@peculiar/x509'");
  });

  it('loads the noun from @baton/testenv when it is installed', async () => {
    const cmd = await loadTestenvCommand();
    expect(cmd.name()).toBe('testenv');
    expect(cmd.commands.map((c) => c.name())).toEqual(['up', 'ls', 'nodes', 'down', 'build']);
  });
});
