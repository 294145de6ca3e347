import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import {
  installOutside,
  installUserPulumiProject,
  type OutsideInstall,
  type PackedTarballs,
  packPackages,
  runtimeClosure,
} from '@baton/testbed';
import type { ControllerSide, FluxSide, HandoffBed } from '@baton/testenv/beds';
import { pinBedImages } from '@baton/testenv/images';
import { createPulumiEnv, ensurePulumiEngine, type PulumiEnv } from '@baton/testenv/pulumi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startDemoBed } from '../../../scripts/demo/bed.js';
import { configureStack } from '../../../scripts/demo/pulumi-up.js';
import { JWT_PATTERN } from '../../support/handoff-run.js';
import { readmeBlock } from '../../support/readme-block.js';
import { stackCli } from '../pulumi/pulumi-fixture.js';

// baton as a user gets it: the CLI and the Pulumi component packed, `npm install`ed into a fresh directory outside the
// repository (third-party dependencies from the registry), and run from there against a test-bed cluster: the
// installed `baton up`, and `pulumi up` of a TypeScript program of the project's own, compiled with its own tsc.
const execFileAsync = promisify(execFile);
const STACK = `outside${process.pid}`;

const startedAt = performance.now();
const packDir = join(tmpdir(), `baton-pack-${process.pid}`);
let tarballs: PackedTarballs;
let project: OutsideInstall;
const printed: string[] = [];

beforeAll(async () => {
  tarballs = await packPackages(runtimeClosure(['@baton/cli', '@baton/pulumi']), packDir);
  project = await installUserPulumiProject(tarballs);
}, 900_000);

afterAll(async () => {
  await project?.remove();
  await rm(packDir, { recursive: true, force: true });
  const sizes = Object.fromEntries([...(tarballs?.values() ?? [])].map((t) => [t.path.split('/').pop(), t.bytes]));
  process.stderr.write(
    `outside install: tarballs ${JSON.stringify(sizes)} bytes; npm install ${project?.installSeconds.toFixed(1)} s; node_modules ${((project?.nodeModulesBytes ?? 0) / 1e6).toFixed(0)} MB; file wall time ${((performance.now() - startedAt) / 1000).toFixed(0)} s\n`,
  );
});

/** Paths under `dir` (relative), recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name)));
}

/** Runs an installed bin in the project, as a user's shell does; rejects with its output on a non-zero exit. */
async function runBin(name: string, args: readonly string[]) {
  const r = await execFileAsync(project.bin(name), [...args], {
    cwd: project.dir,
    env: project.env,
    timeout: 600_000,
  }).catch((err: { code: number; stdout: string; stderr: string }) => err);
  printed.push(r.stdout, r.stderr);
  return { code: 'code' in r ? r.code : 0, stdout: r.stdout, stderr: r.stderr };
}

describe('the installed packages', () => {
  it('are compiled JavaScript: no TypeScript sources, no tsx, and no test bed', async () => {
    const nodeModules = join(project.dir, 'node_modules');
    const baton = await filesUnder(join(nodeModules, '@baton'));
    expect(baton.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(baton).toContain('cli/dist/main.js');
    // The bin runs the CLI's bundle, with the verifier's worker and the Job engine's pinned image beside it.
    expect(baton).toEqual(
      expect.arrayContaining(['cli/dist/baton.mjs', 'cli/dist/verify-worker.js', 'cli/dist/job-image.json']),
    );
    expect(baton).toContain('pulumi/dist/provider.js');
    expect(existsSync(join(nodeModules, 'tsx'))).toBe(false);
    expect(existsSync(join(nodeModules, '@baton', 'testenv'))).toBe(false);
    const cli = JSON.parse(readFileSync(join(nodeModules, '@baton', 'cli', 'package.json'), 'utf8')) as {
      version: string;
      dependencies: Record<string, string>;
    };
    expect(Object.values(cli.dependencies).filter((v) => v.startsWith('workspace:'))).toEqual([]);
    expect((await runBin('baton', ['--version'])).stdout).toBe(`${cli.version}\n`);
  });

  it('baton init renders every shipped profile without the repository: the installed package carries them', async () => {
    for (const profile of ['baton-controller', 'flux', 'argocd']) {
      const dir = join(project.dir, `init-${profile}`);
      const r = await runBin('baton', [
        'init',
        '--profile',
        profile,
        '--git-url',
        'http://git.invalid/cluster-config.git',
        '--name',
        'edge-1',
        '--dir',
        dir,
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('kind: HandoffPlan');
      expect(r.stdout).toMatch(new RegExp(`profile: "?${profile}"?\\n`));
      const pushed = readdirSync(join(dir, 'push'));
      expect(pushed.length, profile).toBeGreaterThan(3);
      // Flux and Argo CD wait for their CRDs: the committed, generated file ships with the profile.
      if (profile !== 'baton-controller') expect(pushed).toContain('05-crds.generated.yaml');
    }
    const shipped = await filesUnder(join(project.dir, 'node_modules', '@baton', 'cli', 'profiles'));
    expect(shipped.some((f) => f.includes('options/') && f.endsWith('.generated.yaml'))).toBe(false);
  });

  it('baton testenv without @baton/testenv fails as a usage error naming the package to install', async () => {
    const r = await runBin('baton', ['testenv', 'ls']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the package @baton/testenv is not installed');
    expect(r.stderr).toContain('npm install @baton/testenv');
  });
});

describe('the installed baton up', () => {
  let bed: HandoffBed;
  beforeAll(async () => {
    bed = await startDemoBed({ name: `outside-cli-${process.pid}` });
  }, 600_000);
  afterAll(async () => {
    await bed?.stop();
  });

  it('hands a test-bed cluster off', async () => {
    const r = await runBin('baton', ['up', '--plan', bed.side.planPath, '-o', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout) as { outcome: string; revision: string };
    expect(summary).toMatchObject({ outcome: 'handed-off', revision: bed.side.revision });
    for (const secret of bed.side.secretValues) expect(printed.join('\n')).not.toContain(secret);
    expect(printed.join('\n')).not.toMatch(JWT_PATTERN);
  }, 600_000);
});

describe('pulumi up of a program of its own that imports the installed @baton/pulumi', () => {
  let bed: HandoffBed;
  let env: PulumiEnv;
  const cli = (args: readonly string[], input?: string) => stackCli(env, project.dir, STACK, printed).run(args, input);

  beforeAll(async () => {
    bed = await startDemoBed({ name: `outside-pulumi-${process.pid}` });
    // The test bed's engine and language host; no NODE_OPTIONS loader and no NODE_PATH into the monorepo.
    env = await createPulumiEnv({ engine: await ensurePulumiEngine(), env: { NODE_OPTIONS: '', NODE_PATH: '' } });
    await env.run(['stack', 'init', STACK], { cwd: project.dir });
    await configureStack(bed, cli);
  }, 600_000);

  afterAll(async () => {
    await env?.cleanup();
    expect(await env?.processes()).toEqual([]);
    await bed?.stop();
  });

  it('hands off; a second up changes nothing', async () => {
    await cli(['up', '--yes']);
    const receipt = JSON.parse((await cli(['stack', 'output', '--json', 'receipt'])).stdout) as {
      outcome: string;
      revision: string;
      proof: { probeStatus: number };
    };
    expect(receipt).toMatchObject({ outcome: 'handed-off', revision: bed.side.revision, proof: { probeStatus: 401 } });

    // --expect-no-changes makes the CLI fail (and `cli` throw) on any change.
    const again = await cli(['up', '--yes', '--expect-no-changes']);
    expect(again.stdout).toMatch(/3 unchanged/);
    for (const secret of bed.side.secretValues) expect(printed.join('\n')).not.toContain(secret);
    expect(printed.join('\n')).not.toMatch(JWT_PATTERN);
  }, 900_000);
});

describe("the README's 'Use it on your cluster' block", () => {
  it('is what the tests below run: init, the commit, the pull credential, plan, up, status, audit verify', () => {
    const commands = readmeBlock('use-it')
      .filter((l) => l.trim() !== '')
      .map((l) => l.split(/\s+/).slice(0, 3).join(' '));
    expect(commands).toEqual([
      'npx baton init',
      'git clone -q',
      'git -C fleet',
      "printf 'username: %s\\npassword:",
      'npx baton plan',
      'npx baton up',
      'npx baton status',
      'npx baton audit',
    ]);
  });
});

// The user's machine: `npm install @baton/cli` (the packed tarballs) in a fresh folder, a home whose ~/.kube/config
// reaches the cluster and whose Git pushes to the repository; GIT_URL, GIT_USER and DEPLOY_TOKEN as the README names
// them. Nothing else: no checkout path, no variable of baton's. Flux's lines are the same with `--profile flux`, and
// one step the README does not have: Flux's images are pinned by upstream's digests, which cannot be pulled here, so
// the bed's builds of them are pinned instead (the bed's own copy of the profile does the same).
// Flux joined once init wrote what Git carries apart from the push set (git/): with the push set committed whole, as
// the README said before, Git carried Flux's CRDs and RBAC, which its scoped reconciler may not apply, and the root
// Kustomization stayed not Ready ("customresourcedefinitions ... is forbidden") until the push budget ran out.
const README_PROFILES: readonly ('baton-controller' | 'flux')[] = ['baton-controller', 'flux'];

describe.each(README_PROFILES)(
  "the README's block typed as it stands by a user of the installed CLI, --profile %s",
  (profile) => {
    let bed: HandoffBed<ControllerSide>;
    let images: Readonly<Record<string, string>> = {};
    let user: OutsideInstall;
    let home: string;
    let env: NodeJS.ProcessEnv;
    let deployToken: string;
    const lines = readmeBlock('use-it').map((l) => l.replace('--profile baton-controller', `--profile ${profile}`));

    beforeAll(async () => {
      const cliOnly = new Set(runtimeClosure(['@baton/cli']));
      user = await installOutside({ tarballs: new Map([...tarballs].filter(([name]) => cliOnly.has(name))) });
      const name = `readme-${profile === 'flux' ? 'flux' : 'bc'}-${process.pid}`;
      if (profile === 'flux') {
        const flux = (await startDemoBed({ name, profile: 'flux' })) as HandoffBed<FluxSide>;
        images = flux.side.images;
        bed = flux;
      } else bed = await startDemoBed({ name });
      const plan = parse(readFileSync(bed.side.planPath, 'utf8')) as { pull: { source: { url: string } } };
      const url = plan.pull.source.url;
      const pull = parse(readFileSync(bed.side.pullCredentialPath, 'utf8')) as { username: string; password: string };
      deployToken = pull.password;
      home = await mkdtemp(join(tmpdir(), 'baton-home-'));
      await mkdir(join(home, '.kube'));
      await copyFile(bed.kubeconfigPath, join(home, '.kube', 'config'));
      const origin = new URL(url);
      await writeFile(
        join(home, '.git-credentials'),
        `${origin.protocol}//${pull.username}:${pull.password}@${origin.host}\n`,
        { mode: 0o600 },
      );
      await writeFile(
        join(home, '.gitconfig'),
        '[user]\n\tname = Platform Engineer\n\temail = platform@example.test\n[credential]\n\thelper = store\n[init]\n\tdefaultBranch = main\n',
      );
      env = { ...user.env, HOME: home, GIT_URL: url, GIT_USER: pull.username, DEPLOY_TOKEN: deployToken };
    }, 900_000);

    afterAll(async () => {
      await bed?.stop();
      await user?.remove();
      if (home) await rm(home, { recursive: true, force: true });
    });

    /** What the user would look at after `line`: re-pins Flux's images after init (see above), checks up and status. */
    async function afterLine(line: string, stdout: string): Promise<void> {
      if (line.startsWith('npx baton init') && profile === 'flux')
        for (const d of ['push', 'git'])
          for (const f of await filesUnder(join(user.dir, d)))
            await writeFile(join(user.dir, d, f), pinBedImages(readFileSync(join(user.dir, d, f), 'utf8'), images));
      if (line.startsWith('npx baton up'))
        expect(stdout).toMatch(/^outcome: +handed-off\n[\s\S]*\ncluster: +prod-eu-1 /);
      if (line.startsWith('npx baton status')) {
        // The receipt names the commit the user pushed: the controller follows clusters/prod-eu-1 of their repository.
        const head = (await execFileAsync('git', ['-C', join(user.dir, 'fleet'), 'rev-parse', 'HEAD'], { env })).stdout;
        expect(stdout).toMatch(/^run id: /m);
        expect(stdout).toMatch(/^outcome: +handed-off$/m);
        expect(stdout).toContain(head.trim());
      }
      if (line.startsWith('npx baton audit verify')) expect(stdout).toMatch(/^verified/);
    }

    it('hands the cluster off to the controller it pushed, following the commit the user made', async () => {
      const outputs: string[] = [];
      const seconds: string[] = [];
      for (const line of lines) {
        const started = performance.now();
        const r = await execFileAsync('bash', ['-o', 'pipefail', '-c', line], {
          cwd: user.dir,
          env,
          timeout: 600_000,
          maxBuffer: 16 * 1024 * 1024,
        }).catch((err: { code: number; stdout: string; stderr: string }) => err);
        outputs.push(r.stdout, r.stderr);
        expect('code' in r ? r.code : 0, `${line}\n${r.stdout}\n${r.stderr}`).toBe(0);
        seconds.push(
          `${line.split(/\s+/).slice(0, 3).join(' ')} ${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
        await afterLine(line, r.stdout);
      }
      process.stderr.write(
        `README block, --profile ${profile}: npm install ${user.installSeconds.toFixed(1)} s; ${seconds.join('; ')}\n`,
      );
      const all = outputs.join('\n');
      expect(all).not.toContain(deployToken);
      const webhookFile = join(user.dir, 'baton-webhook.yaml');
      if (existsSync(webhookFile))
        for (const value of Object.values(parse(readFileSync(webhookFile, 'utf8')) as Record<string, string>))
          expect(all).not.toContain(value);
      expect(all).not.toMatch(JWT_PATTERN);
    }, 900_000);
  },
);
