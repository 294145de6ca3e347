import { ConfigError } from '@baton/errors';
import type { Command } from '@commander-js/extra-typings';

/** The package that carries `baton testenv`; the CLI does not depend on it at run time. */
export const TESTENV_PACKAGE = '@baton/testenv';

/**
 * Loads the `testenv` noun from `@baton/testenv` (its one definition, also run by that package's `baton-testenv`
 * bin). The test bed builds Kubernetes and Pulumi from Go modules, so installing the CLI does not pull it in.
 * @throws {ConfigError} naming the package to install when it is not installed.
 */
export async function loadTestenvCommand(
  importCommand: () => Promise<{ testenvCommand(): Command }> = () => import('@baton/testenv/command'),
): Promise<Command> {
  try {
    return (await importCommand()).testenvCommand();
  } catch (err) {
    if (!isPackageMissing(err, TESTENV_PACKAGE)) throw err;
    throw new ConfigError(
      `baton testenv: the package ${TESTENV_PACKAGE} is not installed; it holds the local test bed (Kubernetes and Pulumi built from Go modules) and ships apart from the CLI: install it beside @baton/cli (\`npm install ${TESTENV_PACKAGE}\`) or run its own bin, baton-testenv`,
      { cause: err },
    );
  }
}

function isPackageMissing(err: unknown, name: string): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return e?.code === 'ERR_MODULE_NOT_FOUND' && typeof e.message === 'string' && e.message.includes(`'${name}'`);
}
