import { BatonError, BuildError, ConfigError, KubeApiError, ProcessError } from '@baton/errors';

/** What {@link explainPulumiError} may name in its message. */
export interface PulumiErrorContext {
  /** Stack name, e.g. `dev`. */
  readonly stack?: string;
  /** What was run, e.g. `up` or `pulumi stack export`. */
  readonly operation?: string;
  /** API server URL of the target cluster (never its credentials). */
  readonly server?: string;
  /** `PULUMI_HOME` of the run, named where a plugin is missing. */
  readonly home?: string;
}

const RECOVER_LOCK =
  'if no other update of this stack is running, run `pulumi cancel --yes` (Automation API: `stack.cancel()`) to remove the lock, then `pulumi refresh --clear-pending-creates --yes` (or `pulumi stack export`, drop `pending_operations`, `pulumi stack import`) and run `up` again; see docs/adr/0002-pulumi-engine-from-go-modules.md';

/**
 * Turns an error from Automation API (`CommandError` and its subclasses) or from the Pulumi CLI into one baton error
 * whose message names the cause and the fix in one paragraph: a locked stack, a wrong or missing passphrase, a
 * missing plugin or binary, an unreachable cluster. Anything else becomes a ProcessError with the CLI's last error
 * lines. The original error is kept as `cause`. Duck-typed on name and text, so testenv needs no `@pulumi/pulumi`.
 */
export function explainPulumiError(err: unknown, context: PulumiErrorContext = {}): BatonError {
  if (err instanceof BatonError) return err;
  const name = err instanceof Error ? err.name : '';
  const text = err instanceof Error ? err.message : String(err);
  const what = `pulumi ${context.operation ?? 'command'}${context.stack ? ` of stack "${context.stack}"` : ''}`;
  const details = { stack: context.stack, operation: context.operation, pulumiError: name || undefined };

  if (name === 'ConcurrentUpdateError' || text.includes('the stack is currently locked by')) {
    return new ProcessError(
      `${what} failed: the stack is locked by another update, or by one that crashed or was killed before it could remove its lock; ${RECOVER_LOCK}`,
      { cause: err, details },
    );
  }
  if (text.includes('incorrect passphrase')) {
    return new ConfigError(
      `${what} failed: the secrets passphrase is wrong: PULUMI_CONFIG_PASSPHRASE does not decrypt this stack's secrets, which were encrypted with another passphrase; set it (or createPulumiEnv's passphrase) to the one the stack was created with, or run \`pulumi stack change-secrets-provider passphrase\` with the old one to re-encrypt under a new one`,
      { cause: err, details },
    );
  }
  if (text.includes('passphrase must be set')) {
    return new ConfigError(
      `${what} failed: no secrets passphrase is set and the run is non-interactive; set PULUMI_CONFIG_PASSPHRASE (createPulumiEnv sets it) or PULUMI_CONFIG_PASSPHRASE_FILE`,
      { cause: err, details },
    );
  }
  if (text.includes("no language plugin 'pulumi-language-nodejs' found")) {
    return new BuildError(
      `${what} failed: the Node.js language host (pulumi-language-nodejs) is not next to the pulumi CLI: the Go module proxy serves no version of Pulumi's, so baton's test bed installs its own there when it builds the engine; run \`pnpm baton testenv build\` (ensurePulumiEngine writes the shim again), or put Pulumi's own pulumi-language-nodejs next to the CLI`,
      { cause: err, details },
    );
  }
  const plugin =
    /no (resource|language) plugin '([^']+)' found|could not find plugin|failed to load plugin ([^\s:]+)/.exec(text);
  if (plugin || (text.includes('ENOENT') && /pulumi/.test(text))) {
    const which = plugin?.[2] ?? plugin?.[3] ?? 'the pulumi CLI or a plugin';
    return new BuildError(
      `${what} failed: ${which} is not installed where the engine looks (the plugin cache under ${context.home ?? 'PULUMI_HOME'}, or next to the pulumi binary) and downloads are disabled (PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION); run \`pnpm baton testenv build\` to build the engine, and create the environment with createPulumiEnv, which installs the Kubernetes provider into its plugin cache`,
      { cause: err, details },
    );
  }
  if (
    /cluster is unreachable|connect: connection refused|no such host|i\/o timeout|Unable to connect to the server/.test(
      text,
    )
  ) {
    return new KubeApiError(
      `${what} failed: the Kubernetes provider cannot reach the cluster${context.server ? ` at ${context.server}` : ''} (${firstMatch(text, /dial tcp [^\n"]+|cluster is unreachable[^\n]*/) ?? 'connection failed'}); start the cluster (\`pnpm baton testenv up\`) or fix the server in the kubeconfig given to the provider, then run \`up\` again`,
      { cause: err, details: { ...details, server: context.server } },
    );
  }
  return new ProcessError(`${what} failed: ${lastErrorLines(text)}`, { cause: err, details });
}

function firstMatch(text: string, re: RegExp): string | undefined {
  return re.exec(text)?.[0]?.trim();
}

/** The CLI's `error:` lines (what a user would read), else the last few lines. */
function lastErrorLines(text: string): string {
  const lines = text.split('\n').map((l) => l.trim());
  const errors = lines.filter((l) => /^error:/i.test(l) || l.startsWith('Error:'));
  const picked = errors.length > 0 ? errors : lines.filter(Boolean).slice(-4);
  return picked.join(' ').slice(0, 1500);
}
