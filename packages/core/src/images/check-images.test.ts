import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatTrustedKeys, SigningKey } from '@baton/audit';
import { ConfigError, ImageVerifyError } from '@baton/errors';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseHandoffPlan } from '../handoff-plan.js';
import { loadManifestSet } from '../manifest-set.js';
import { parseProfile } from '../profile.js';
import { checkImages } from './check-images.js';
import { type ImageRef, parseImageRef } from './image-ref.js';
import { matchesImage } from './image-rules.js';
import { podImages } from './pod-images.js';
import { RegistryClient } from './registry-client.js';
import { imageTrustPolicy } from './trust-policy.js';

const fixture = fileURLToPath(new URL('../../../../test/fixtures/handoff/plan.yaml', import.meta.url));
const written = () => parse(readFileSync(fixture, 'utf8')) as Record<string, Record<string, unknown>>;
const IMAGE =
  'ghcr.io/baton-dev/baton-controller@sha256:4f1c2b9a6d0e8f7a3b5c1d2e9f0a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f10';
const key = SigningKey.fromSeed('baton.dev/release', Buffer.alloc(32, 9));
const dir = mkdtempSync(join(tmpdir(), 'baton-check-images-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A logger whose lines the test reads. */
function capture() {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { log, lines };
}

const planWith = (images?: Record<string, unknown>) => {
  const p = written();
  return parseHandoffPlan({ ...p, push: { ...p.push, ...(images ? { images } : {}) } }, 'p.yaml', dirname(fixture))
    .plan;
};

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('checkImages', () => {
  it('lists what the pods of the set run, init containers and CronJobs included', () => {
    const pod = (image: string) => ({
      spec: { containers: [{ image }], initContainers: [{ image: `${image}-init` }] },
    });
    expect(
      podImages([
        { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'a' }, spec: { template: pod('a') } },
        {
          apiVersion: 'batch/v1',
          kind: 'CronJob',
          metadata: { name: 'c' },
          spec: { jobTemplate: { spec: { template: pod('c') } } },
        },
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { image: 'no' } },
        { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'd' }, spec: { template: pod('a') } },
      ]),
    ).toEqual(['a-init', 'a', 'c-init', 'c']);
  });

  it('says loudly that nothing was verified when neither the plan nor the profile names keys', async () => {
    const plan = planWith();
    const { log, lines } = capture();
    expect(await checkImages(plan, loadManifestSet(plan), log)).toEqual({
      verification: 'no-policy',
      images: [IMAGE],
      verified: [],
    });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [
        40,
        'images not verified: profile test-controller declares no imageTrust and the plan names no push.images.trustedKeys or keyless',
      ],
    ]);
  });

  it('skips, warning, with --insecure-skip-image-verify, even with a policy, and asks no registry', async () => {
    const trustedKeys = join(dir, 'keys.yaml');
    writeFileSync(trustedKeys, formatTrustedKeys({ origin: 'baton.dev/release', keys: [{ key: key.verifierKey }] }));
    const plan = planWith({ trustedKeys, mirrors: { 'ghcr.io': `http://127.0.0.1:${await closedPort()}` } });
    const { log, lines } = capture();
    expect(await checkImages(plan, loadManifestSet(plan), log, { skipVerify: true })).toEqual({
      verification: 'skipped',
      images: [IMAGE],
      verified: [],
    });
    expect(lines[0]?.msg).toMatch(/^--insecure-skip-image-verify: the images are pushed unverified/);
  });

  it("verifies with the plan's trusted keys at the plan's mirror, and refuses what it cannot read", async () => {
    const trustedKeys = join(dir, 'keys.yaml');
    writeFileSync(trustedKeys, formatTrustedKeys({ origin: 'baton.dev/release', keys: [{ key: key.verifierKey }] }));
    const port = await closedPort();
    const plan = planWith({ trustedKeys, mirrors: { 'ghcr.io': `http://127.0.0.1:${port}` } });
    expect(plan.push.images.trustedKeys).toBe(trustedKeys);
    const err = await checkImages(plan, loadManifestSet(plan), capture().log).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageVerifyError);
    expect((err as ImageVerifyError).details).toEqual({ image: IMAGE });
    expect((err as Error).message).toContain(`cannot reach http://127.0.0.1:${port}: ECONNREFUSED`);
    // The client given wins over the plan's mirrors (tests, and callers with their own transport).
    const other = new RegistryClient({ mirrors: { 'ghcr.io': 'http://127.0.0.1:1' } });
    const viaOther = await checkImages(plan, loadManifestSet(plan), capture().log, { registry: other }).catch(
      (e: unknown) => e,
    );
    expect((viaOther as Error).message).toContain('cannot reach http://127.0.0.1:1:');
  });

  it("names the plan's trusted-keys file when it cannot be read", async () => {
    const plan = planWith({ trustedKeys: join(dir, 'missing.yaml') });
    await expect(checkImages(plan, loadManifestSet(plan), capture().log)).rejects.toThrow(
      new ConfigError(
        `push.images.trustedKeys: cannot read ${join(dir, 'missing.yaml')} (ENOENT); point it at the trusted-keys file of the keys that sign the images`,
      ),
    );
  });

  it('refuses a profile imageTrust key that is not a verifier key, and a mirror that is not http(s)', () => {
    const profile = {
      name: 'p',
      namespace: 'n',
      revision: { object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c' }, path: 'data.r' },
    };
    expect(() => parseProfile({ ...profile, imageTrust: { keys: ['not-a-key'] } }, 'profile.yaml')).toThrow(
      /^profile\.yaml: invalid profile: A verifier key has the form .* at "imageTrust\.keys\[0\]"$/,
    );
    expect(() => planWith({ mirrors: { 'ghcr.io': 'ftp://mirror' } })).toThrow(/push\.images\.mirrors\.ghcr\.io/);
  });

  it('reads a keyless policy relative to the plan, and names the field or file when it cannot be used', async () => {
    const identities = [{ issuer: 'https://token.actions.githubusercontent.com', subject: 'https://github.com/o/r' }];
    const plan = planWith({ keyless: { trustedRoot: 'no-such-root.json', identities } });
    const root = join(dirname(fixture), 'no-such-root.json');
    expect(plan.push.images.keyless?.trustedRoot).toBe(root);
    await expect(checkImages(plan, loadManifestSet(plan), capture().log)).rejects.toThrow(
      new ConfigError(
        `push.images.keyless.trustedRoot: cannot read ${root} (ENOENT); point it at a Sigstore trusted root (trusted_root.json) for the keyless signers`,
      ),
    );
    const notRoot = join(dir, 'not-a-root.json');
    writeFileSync(notRoot, JSON.stringify({ mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json' }));
    const withNotRoot = planWith({ keyless: { trustedRoot: notRoot, identities } });
    await expect(checkImages(withNotRoot, loadManifestSet(withNotRoot), capture().log)).rejects.toThrow(
      `${notRoot}: mediaType is "application/vnd.dev.sigstore.bundle.v0.3+json", not a Sigstore trusted root`,
    );
    const empty = join(dir, 'empty-root.json');
    writeFileSync(empty, JSON.stringify({ mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1' }));
    const withEmpty = planWith({ keyless: { trustedRoot: empty, identities } });
    await expect(checkImages(withEmpty, loadManifestSet(withEmpty), capture().log)).rejects.toThrow(
      `${empty}: not a usable Sigstore trusted root: it lists no certificate authority or no transparency log`,
    );
  });

  it('refuses a keyless identity named two ways or by a pattern that does not compile, and an empty imageTrust', () => {
    const issuer = 'https://token.actions.githubusercontent.com';
    expect(() =>
      planWith({ keyless: { trustedRoot: 'r.json', identities: [{ issuer, subject: 'a', subjectRegExp: 'a' }] } }),
    ).toThrow(/exactly one of subject \(exact\) or subjectRegExp \(pattern\).*push\.images\.keyless\.identities\[0\]/);
    expect(() =>
      planWith({ keyless: { trustedRoot: 'r.json', identities: [{ issuer, subjectRegExp: '(' }] } }),
    ).toThrow(
      /Not a regular expression: Invalid regular expression: .*push\.images\.keyless\.identities\[0\]\.subjectRegExp/,
    );
    expect(() =>
      planWith({ keyless: { trustedRoot: 'r.json', identities: [{ issuer: 'not a url', subject: 'a' }] } }),
    ).toThrow(/push\.images\.keyless\.identities\[0\]\.issuer/);
    const profile = {
      name: 'p',
      namespace: 'n',
      revision: { object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c' }, path: 'data.r' },
    };
    expect(() => parseProfile({ ...profile, imageTrust: {} }, 'profile.yaml')).toThrow(
      /Declare keys, keyless or rules: an empty imageTrust trusts nothing at "imageTrust"/,
    );
  });

  it("resolves a plan's rules in order, their files relative to the plan, each labelled by its field", async () => {
    const trustedKeys = join(dir, 'agent-keys.yaml');
    writeFileSync(trustedKeys, formatTrustedKeys({ origin: 'baton.dev/release', keys: [{ key: key.verifierKey }] }));
    const reason = 'the Docker official redis image is not signed upstream';
    const plan = planWith({
      rules: [
        { images: ['docker.io/library/redis'], unsigned: reason },
        { images: ['ghcr.io/example/tools/**'], trustedKeys },
      ],
    });
    const policy = await imageTrustPolicy(plan, undefined);
    expect(policy?.source).toBe('push.images.rules');
    expect(policy?.keys).toBeUndefined();
    expect(policy?.rules?.map((r) => [r.label, r.images, r.unsigned, r.keys?.keys.length])).toEqual([
      ['push.images.rules[0]', ['docker.io/library/redis'], reason, undefined],
      ['push.images.rules[1]', ['ghcr.io/example/tools/**'], undefined, 1],
    ]);
    const missing = planWith({ rules: [{ images: ['ghcr.io/x/y'], trustedKeys: 'gone.yaml' }] });
    await expect(imageTrustPolicy(missing, undefined)).rejects.toThrow(
      new ConfigError(
        `push.images.rules[0].trustedKeys: cannot read ${join(dirname(fixture), 'gone.yaml')} (ENOENT); point it at the trusted-keys file of the keys that sign the images`,
      ),
    );
  });

  it("resolves a profile's rules with inline keys, labelled by the profile's file", async () => {
    const profile = parseProfile(
      {
        name: 'p',
        namespace: 'n',
        revision: { object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c' }, path: 'data.r' },
        imageTrust: {
          keys: [key.verifierKey],
          rules: [{ images: ['quay.io/argoproj/*'], keys: [key.verifierKey] }],
        },
      },
      'profile.yaml',
    );
    const policy = await imageTrustPolicy(planWith(), { file: '/p/profile.yaml', digest: 'sha256:0', profile });
    expect(policy?.source).toBe('profile p (/p/profile.yaml): imageTrust');
    expect(policy?.rules?.map((r) => [r.label, r.keys?.keys.length])).toEqual([
      ['profile p (/p/profile.yaml): imageTrust.rules[0]', 1],
    ]);
    expect(() =>
      parseProfile({ ...profile, imageTrust: { rules: [{ images: ['quay.io/a/b'], keys: ['nope'] }] } }, 'x.yaml'),
    ).toThrow(/at "imageTrust\.rules\[0\]\.keys\[0\]"/);
  });

  it('takes the plan’s provenance rule over the profile’s, and refuses one with no signers to check it with', async () => {
    const provenance = { builders: ['https://baton.dev/image-build/pnpm-image-build@v1'] };
    const bare = planWith({ provenance });
    await expect(imageTrustPolicy(bare, undefined)).rejects.toThrow(
      /^push\.images\.provenance: provenance is checked with each image's signature, and neither the plan .* nor profile test-controller \(imageTrust\) names who signs the images: declare the signers too$/,
    );
    const profile = parseProfile(
      {
        name: 'p',
        namespace: 'n',
        revision: { object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c' }, path: 'data.r' },
        imageTrust: { keys: [key.verifierKey], provenance: { builders: ['https://ci.example/b@v1'] } },
      },
      'profile.yaml',
    );
    const loaded = { file: '/p/profile.yaml', digest: 'sha256:0', profile };
    expect((await imageTrustPolicy(planWith(), loaded))?.provenance).toEqual({ builders: ['https://ci.example/b@v1'] });
    expect((await imageTrustPolicy(bare, loaded))?.provenance).toEqual(provenance);
  });

  it('refuses a rule with signers and a reason, with neither, or naming a tag, and a reason too short to say why', () => {
    const issuer = 'https://token.actions.githubusercontent.com';
    const keyless = { trustedRoot: 'r.json', identities: [{ issuer, subject: 'a' }] };
    expect(() =>
      planWith({ rules: [{ images: ['ghcr.io/a/b'], keyless, unsigned: 'upstream signs nothing' }] }),
    ).toThrow(/signers \(keys, keyless, or both\) or unsigned with the reason, not both.*push\.images\.rules\[0\]/);
    expect(() => planWith({ rules: [{ images: ['ghcr.io/a/b'] }] })).toThrow(/push\.images\.rules\[0\]/);
    expect(() => planWith({ rules: [{ images: ['ghcr.io/a/b:1.0'], unsigned: 'upstream signs nothing' }] })).toThrow(
      /without a tag or digest .* at "push\.images\.rules\[0\]\.images\[0\]"/,
    );
    expect(() => planWith({ rules: [{ images: ['redis'], unsigned: 'upstream signs nothing' }] })).toThrow(
      /Name the registry and the repository, e\.g\. ghcr\.io\/fluxcd\/\* .*push\.images\.rules\[0\]\.images\[0\]/,
    );
    expect(() => planWith({ rules: [{ images: ['ghcr.io/a/b'], unsigned: 'because' }] })).toThrow(
      /push\.images\.rules\[0\]\.unsigned/,
    );
  });
});

describe('matchesImage', () => {
  const at = (text: string) => parseImageRef(text) as ImageRef;
  it('matches a repository exactly, * within one segment and ** across them, registry first', () => {
    const redis = at(`redis@sha256:${'a'.repeat(64)}`);
    expect(matchesImage('docker.io/library/redis', redis)).toBe(true);
    expect(matchesImage('docker.io/library/redis-*', redis)).toBe(false);
    expect(matchesImage('docker.io/*/redis', redis)).toBe(true);
    expect(matchesImage('ghcr.io/library/redis', redis)).toBe(false);
    const deep = at('ghcr.io/fluxcd/flux/source-controller:v1');
    expect(matchesImage('ghcr.io/fluxcd/*', deep)).toBe(false);
    expect(matchesImage('ghcr.io/fluxcd/**', deep)).toBe(true);
    expect(matchesImage('ghcr.io/fluxcd/*/source-*', deep)).toBe(true);
    // A dot is a dot: ghcr.io does not match ghcrxio.
    expect(matchesImage('ghcr.io/fluxcd/**', at('ghcrxio.com/fluxcd/a'))).toBe(false);
    expect(matchesImage('localhost:5000/a/b', at('localhost:5000/a/b'))).toBe(true);
  });
});
