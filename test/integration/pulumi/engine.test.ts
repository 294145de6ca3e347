import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePorts, pollUntil } from '@baton/testenv';
import {
  createPulumiEnv,
  ensurePulumiEngine,
  explainPulumiError,
  PULUMI_VERSIONS,
  type PulumiEngine,
  type PulumiEnv,
} from '@baton/testenv/pulumi';
import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import { PulumiCommand } from '@pulumi/pulumi/automation/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineStack, pulumiEnv } from './pulumi-fixture.js';

/** Inputs of the gate resource: its create blocks until `gateFile` exists, after writing `startedFile`. */
interface GateInputs {
  readonly startedFile: string;
  readonly gateFile: string;
}

// Runs in the dynamic-provider plugin process: only `require` and its arguments, no captured modules.
const gateProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: GateInputs) {
    const fs = require('node:fs') as typeof import('node:fs');
    fs.writeFileSync(inputs.startedFile, String(process.pid));
    while (!fs.existsSync(inputs.gateFile)) await new Promise((resolve) => setTimeout(resolve, 50));
    return { id: 'gate', outs: inputs };
  },
};

class Gate extends pulumi.dynamic.Resource {
  constructor(name: string, args: { startedFile: string; gateFile: string }) {
    super(gateProvider, name, args);
  }
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the operation to fail');
}

describe('the Pulumi engine built from Go modules', () => {
  let engine: PulumiEngine;
  let env: PulumiEnv;

  beforeAll(async () => {
    engine = await ensurePulumiEngine();
    env = await pulumiEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
    expect(await env?.processes()).toEqual([]);
  });

  it('reports the pinned versions to Automation API and the engine', async () => {
    const cmd = await PulumiCommand.get({ root: engine.cliRoot });
    expect(cmd.version?.version).toBe(PULUMI_VERSIONS.pulumi);
    const plugins = JSON.parse((await env.run(['plugin', 'ls', '--json'])).stdout) as {
      name: string;
      version: string;
    }[];
    expect(plugins.map((p) => `${p.name}@${p.version}`)).toEqual([`kubernetes@${PULUMI_VERSIONS.kubernetes}`]);
    // The provider serves the schema that ships in its module, stamped with its version.
    const schema = JSON.parse((await env.run(['package', 'get-schema', 'kubernetes'])).stdout) as { version: string };
    expect(schema.version).toBe(PULUMI_VERSIONS.kubernetes);
  });

  it('names the missing binary and how to build it', async () => {
    const gone = { ...engine, pulumi: join(env.dir, 'nowhere', 'pulumi') };
    const err = await rejection(createPulumiEnv({ engine: gone }));
    expect(err.message).toMatch(/the pulumi CLI is missing at .*nowhere\/pulumi.*pnpm baton testenv build/);
  });

  it('fails fast, without downloading, when the provider plugin is not installed', async () => {
    const bare = await createPulumiEnv({ engine, installKubernetesProvider: false });
    try {
      const stack = await inlineStack(bare, {
        stackName: 'no-plugin',
        program: async () => {
          new k8s.core.v1.ConfigMap('cm', { data: { a: 'b' } });
        },
      });
      const started = performance.now();
      const err = explainPulumiError(await rejection(stack.up()), {
        stack: 'no-plugin',
        operation: 'up',
        home: bare.home,
      });
      expect(performance.now() - started).toBeLessThan(60_000);
      expect(err.code).toBe('build');
      expect(err.message).toMatch(/kubernetes.*is not installed where the engine looks.*downloads are disabled/);
    } finally {
      await bare.cleanup();
    }
  });

  it('explains a wrong passphrase, and the right one still works', async () => {
    const program = async () => ({ shown: new pulumi.Config().requireSecret('token').apply((t) => t.length) });
    const stack = await inlineStack(env, { stackName: 'passphrase', program });
    await stack.setConfig('token', { value: 'not-a-real-token', secret: true });
    await stack.up();
    const wrong = await inlineStack(env, {
      stackName: 'passphrase',
      program,
      envVars: { PULUMI_CONFIG_PASSPHRASE: 'another passphrase' },
    });
    const err = explainPulumiError(await rejection(wrong.up()), { stack: 'passphrase', operation: 'up' });
    expect(err.code).toBe('config');
    expect(err.message).toContain('the secrets passphrase is wrong');
    expect(err.message).not.toContain('not-a-real-token');
    expect((await stack.up()).summary.result).toBe('succeeded');
  });

  it('explains an unreachable cluster, and leaves the stack unlocked', async () => {
    const [port] = await freePorts(1);
    const server = `https://127.0.0.1:${port}`;
    const kubeconfig = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 'not-a-real-token' } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'c',
    });
    const stack = await inlineStack(env, {
      stackName: 'unreachable',
      program: async () => {
        const provider = new k8s.Provider('cluster', { kubeconfig: pulumi.secret(kubeconfig) });
        new k8s.core.v1.ConfigMap('cm', { data: { a: 'b' } }, { provider });
      },
    });
    const err = explainPulumiError(await rejection(stack.up()), { stack: 'unreachable', operation: 'up', server });
    expect(err.code).toBe('kube-api');
    expect(err.message).toContain(`cannot reach the cluster at ${server}`);
    expect(err.message).not.toContain('not-a-real-token');
    await stack.exportStack(); // not locked
  });

  it("runs a shell `pulumi preview` of stacks/example (TypeScript, ESM) through the test bed's language host", async () => {
    expect(engine.languageHost).toBe(join(engine.cliRoot, 'bin', 'pulumi-language-nodejs'));
    const cwd = new URL('../../../stacks/example', import.meta.url).pathname;
    const stack = `shell-${process.pid}`;
    await env.run(['stack', 'init', stack], { cwd });
    try {
      await env.run(['config', 'set', '--secret', 'kubeconfig', '--stack', stack], { cwd, input: 'not-a-kubeconfig' });
      // No cluster: the provider cannot connect, so the preview shows the plan; the program itself ran.
      const preview = await env.run(['preview', '--stack', stack], { cwd, stack });
      expect(preview.stdout).toMatch(/\+ 4 to create/);
      expect(preview.stdout + preview.stderr).not.toContain('not-a-kubeconfig');
    } finally {
      // Also removes stacks/example/Pulumi.<stack>.yaml.
      await env.run(['stack', 'rm', '--yes', '--force', stack], { cwd });
    }
  });

  it('reports the error of a program that throws once, as the program said it, and fails the update', async () => {
    const cwd = join(env.dir, 'throws');
    await mkdir(cwd, { recursive: true });
    await writeFile(join(cwd, 'Pulumi.yaml'), 'name: throws\nruntime: nodejs\n');
    await writeFile(join(cwd, 'package.json'), '{ "name": "throws", "type": "module", "main": "index.ts" }\n');
    await writeFile(join(cwd, 'index.ts'), "const reason: string = 'the program refused';\nthrow new Error(reason);\n");
    await env.run(['stack', 'init', 'dev'], { cwd });
    const err = await rejection(env.run(['preview', '--stack', 'dev'], { cwd, stack: 'dev' }));
    expect(err.message).toContain('Error: the program refused');
    expect(err.message).not.toMatch(/language host|language plugin|exited with code/);
  });

  it('recovers a stack locked by a killed up with pulumi cancel and stack export/import', async () => {
    const startedFile = join(env.dir, 'gate.started');
    const gateFile = join(env.dir, 'gate.open');
    const stack = await inlineStack(env, {
      stackName: 'crash',
      program: async () => {
        new Gate('gate', { startedFile, gateFile });
      },
    });
    const running = rejection(stack.up());
    await pollUntil(async () => (existsSync(startedFile) ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 50,
      what: 'the gate resource to start creating',
    });
    // A crash: the CLI and the plugins it started die at once, with no chance to unlock.
    for (const pid of await env.processes()) process.kill(pid, 'SIGKILL');
    await running;
    await pollUntil(async () => ((await env.processes()).length === 0 ? true : undefined), {
      timeoutMs: 10_000,
      intervalMs: 50,
      what: 'the killed processes to be gone',
    });

    const locked = explainPulumiError(await rejection(stack.up()), { stack: 'crash', operation: 'up' });
    expect(locked.message).toMatch(/the stack is locked.*pulumi cancel/);

    // Recovery as a Pulumi user does it: remove the lock, then drop the operation left pending in the state.
    await stack.cancel();
    const state = await stack.exportStack();
    expect(state.deployment.pending_operations?.map((op: { type: string }) => op.type)).toEqual(['creating']);
    delete state.deployment.pending_operations;
    await stack.importStack(state);

    await writeFile(gateFile, 'open');
    const res = await stack.up();
    expect(res.summary.result).toBe('succeeded');
    expect(res.summary.resourceChanges).toMatchObject({ create: 1 });
  });
});
