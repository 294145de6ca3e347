import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attestImage,
  imageSignatureStatement,
  type KeylessIdentity,
  keylessTrust,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  type SigningKey,
  SLSA_PROVENANCE_PREDICATE_TYPE,
  TrustedKeySet,
  verifyKeylessImageSignature,
} from '@baton/audit';
import {
  dockerConfigCredentials,
  type ImageTrustPolicy,
  type ProvenancePolicy,
  RegistryClient,
  verifyImages,
} from '@baton/core';
import { ImageVerifyError } from '@baton/errors';
import {
  IMAGE_BUILDER_ID,
  imageProvenance,
  MEDIA_TYPE,
  PROVENANCE_ANNOTATIONS,
  SIGNATURE_ANNOTATIONS,
  signLayout,
} from '@baton/image';
import { freePorts } from '@baton/testenv';
import {
  createLocalSigstore,
  type KeylessSignOptions,
  type LocalRegistry,
  type LocalSigstore,
  putCosignV2Signature,
  startRegistry,
} from '@baton/testenv/images';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RELEASE_KEY,
  RELEASE_WORKFLOW,
  type SignedImageRegistry,
  STRANGER_KEY,
  startSignedImageRegistry,
} from '../../support/signed-images.js';

// baton's check of an image's signature before anything is minted, against a real registry (Debian's Distribution
// 2.8, which has no referrers API: signatures are found through the referrers tag schema, as cosign finds them).
// The images stand for `ghcr.io/example/app`: the operator reads ghcr.io through a mirror (push.images.mirrors).

const policyOf = (key: SigningKey): ImageTrustPolicy => ({
  source: 'profile app: imageTrust',
  keys: new TrustedKeySet({ origin: 'baton.dev/release', keys: [{ key: key.verifierKey }] }),
});

let images: SignedImageRegistry;
let registry: LocalRegistry;
let dir: string;
let client: RegistryClient;
let digests: SignedImageRegistry['digests'];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-sigverify-'));
  images = await startSignedImageRegistry(dir, 'example/app');
  ({ registry, digests } = images);
  client = new RegistryClient({ mirrors: { 'ghcr.io': `http://${registry.host}` } });
}, 120_000);

afterAll(async () => {
  await registry?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const ref = (which: keyof SignedImageRegistry['digests']) => `ghcr.io/example/app@${digests[which]}`;
const refusal = async (images: string[], policy = policyOf(RELEASE_KEY), c = client) => {
  const err = await verifyImages(images, policy, c).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ImageVerifyError);
  return (err as Error).message;
};

describe('verifying pinned images before the push, from their registry', () => {
  it('accepts an image signed by a trusted key, found through the referrers tag, and says which key and signature', async () => {
    const {
      verified: [v],
    } = await verifyImages([ref('signed'), ref('signed')], policyOf(RELEASE_KEY), client);
    expect(v).toMatchObject({ image: ref('signed'), digest: digests.signed, signedBy: RELEASE_KEY.verifierKey });
    const listed = await client.referrers(
      { text: ref('signed'), registry: 'ghcr.io', repository: 'example/app', digest: digests.signed },
      digests.signed,
      SIGSTORE_BUNDLE_MEDIA_TYPE,
    );
    expect(listed.map((d) => d.digest)).toEqual([v!.signature]);
    expect(listed[0]!.annotations).toEqual(SIGNATURE_ANNOTATIONS);
  });

  it('refuses an unsigned image, naming the image, the registry read and the two ways on', async () => {
    expect(await refusal([ref('signed'), ref('unsigned')])).toBe(
      `image ${ref('unsigned')}: unsigned: http://${registry.host} lists no signature of ${digests.unsigned} (no Sigstore bundle referrer, no cosign ${digests.unsigned.replace(':', '-')}.sig tag); sign it (cosign sign, pnpm image:build --sign-key) or pass --insecure-skip-image-verify to push it unverified (recorded in the audit event)`,
    );
  });

  it('refuses an image signed by a key the policy does not trust', async () => {
    expect(await refusal([ref('stranger')])).toMatch(
      new RegExp(
        `^image ${ref('stranger')}: no signature verifies with the keys of profile app: imageTrust: signature sha256:[0-9a-f]{64}: signed by baton\\.dev/release\\+${STRANGER_KEY.keyId.toString('hex')}, which the trusted-keys file does not list;`,
      ),
    );
  });

  it("refuses a valid signature of another image's digest attached to this one", async () => {
    expect(await refusal([ref('borrowed')])).toContain(
      `signs ${digests.signed}, not ${digests.borrowed}: a signature of another image`,
    );
  });

  it('refuses an image pinned by tag: only a digest can be verified', async () => {
    expect(await refusal(['ghcr.io/example/app:signed'])).toBe(
      'image ghcr.io/example/app:signed: pinned by tag, and profile app: imageTrust verifies digests: pin it as ghcr.io/example/app:signed@sha256:<digest> (the digest the signature names)',
    );
  });

  it('refuses when the registry cannot be reached, naming where it looked and the fix', async () => {
    const [port] = await freePorts(1);
    const offline = new RegistryClient({ mirrors: { 'ghcr.io': `http://127.0.0.1:${port}` } });
    expect(await refusal([ref('signed')], policyOf(RELEASE_KEY), offline)).toBe(
      `image ${ref('signed')}: cannot read its signatures: cannot reach http://127.0.0.1:${port}: ECONNREFUSED; check the operator's network access to ghcr.io, or name a mirror that serves it (push.images.mirrors), or pass --insecure-skip-image-verify to push it unverified (recorded in the audit event)`,
    );
  });

  it('lists a signature once when an image and its signature are pushed again', async () => {
    const { layout } = images.layout('signed', 'one');
    await signLayout(layout, 'ghcr.io/example/app', RELEASE_KEY);
    await registry.push(layout, 'example/app', 'signed');
    const res = await fetch(`http://${registry.host}/v2/example/app/manifests/${digests.signed.replace(':', '-')}`, {
      headers: { accept: MEDIA_TYPE.index },
    });
    expect(((await res.json()) as { manifests: unknown[] }).manifests).toHaveLength(1);
  });
});

describe('per-repository rules: the first rule that matches an image decides, the policy governs the rest', () => {
  const REDIS_REASON = 'the Docker official redis image is not signed upstream';
  let redis: string;
  let agent: string;
  let agentByRelease: string;
  const keysOf = (key: SigningKey) => policyOf(key).keys!;
  const rules = (base: Partial<ImageTrustPolicy> = { keys: keysOf(RELEASE_KEY) }): ImageTrustPolicy => ({
    source: 'profile app: imageTrust',
    ...base,
    rules: [
      { label: 'profile app: imageTrust.rules[0]', images: ['ghcr.io/example/redis'], unsigned: REDIS_REASON },
      { label: 'profile app: imageTrust.rules[1]', images: ['ghcr.io/example/tools/**'], keys: keysOf(STRANGER_KEY) },
    ],
  });

  beforeAll(async () => {
    // The unsigned image again, in a repository of its own; an image another team signs with its own key.
    redis = `ghcr.io/example/redis@${await registry.push(images.layout('redis', 'two').layout, 'example/redis', 'redis')}`;
    const signedAs = async (name: string, key: SigningKey, content: string) => {
      const tag = `${name.replaceAll('/', '-')}-${content}`;
      const { layout } = images.layout(tag, content);
      await signLayout(layout, `ghcr.io/${name}`, key);
      return `ghcr.io/${name}@${await registry.push(layout, name, tag)}`;
    };
    agent = await signedAs('example/tools/agent', STRANGER_KEY, 'six');
    agentByRelease = await signedAs('example/tools/agent', RELEASE_KEY, 'seven');
  }, 120_000);

  it('lets the unsigned image through by digest with its reason, and verifies the others with their own keys', async () => {
    const verdict = await verifyImages([ref('signed'), redis, agent], rules(), client);
    expect(verdict.verified.map((v) => [v.image, v.signedBy])).toEqual([
      [ref('signed'), RELEASE_KEY.verifierKey],
      [agent, STRANGER_KEY.verifierKey],
    ]);
    expect(verdict.unsigned).toEqual([
      { image: redis, digest: redis.split('@')[1], reason: REDIS_REASON, rule: 'profile app: imageTrust.rules[0]' },
    ]);
  });

  it("refuses what only the policy's keys sign under a rule with its own, and an unsigned image by tag", async () => {
    expect(await refusal([agentByRelease], rules())).toMatch(
      new RegExp(
        `^image ${agentByRelease}: no signature verifies with the keys of profile app: imageTrust\\.rules\\[1\\]: signature sha256:[0-9a-f]{64}: signed by baton\\.dev/release\\+${RELEASE_KEY.keyId.toString('hex')}, which the trusted-keys file does not list;`,
      ),
    );
    expect(await refusal(['ghcr.io/example/redis:7'], rules())).toBe(
      'image ghcr.io/example/redis:7: pinned by tag, and profile app: imageTrust verifies digests: pin it as ghcr.io/example/redis:7@sha256:<digest> (the digest the signature names)',
    );
  });

  it('with rules alone, refuses an image no rule governs, naming its repository and the fix', async () => {
    expect(await refusal([ref('signed')], rules({}))).toBe(
      `image ${ref('signed')}: no rule of profile app: imageTrust governs ghcr.io/example/app, and it trusts no keys or identities for other images: add a rule whose images match it (its signers, or unsigned with the reason)`,
    );
    expect((await verifyImages([redis, agent], rules({}), client)).verified).toHaveLength(1);
  });
});

describe('SLSA provenance: with a policy that asks for it, each signed image needs a trusted build attested', () => {
  const SOURCE = 'git+https://github.com/example/app';
  const predicate = (builder = IMAGE_BUILDER_ID) => ({
    ...(imageProvenance('packages/app/main.ts', { uri: SOURCE, commit: 'c'.repeat(40), clean: true }, {}) as object),
    runDetails: { builder: { id: builder } },
  });
  const withProvenance = (provenance: ProvenancePolicy): ImageTrustPolicy => ({
    ...policyOf(RELEASE_KEY),
    provenance,
  });
  const trusted = withProvenance({ builders: [IMAGE_BUILDER_ID], sources: [SOURCE] });
  let attested: string;
  let otherBuilder: string;
  let strangerAttested: string;

  /** An image signed by RELEASE_KEY, with an SLSA provenance attestation by `attester` naming `builder`. */
  const signedAndAttested = async (tag: string, builder: string, attester: SigningKey) => {
    const { layout } = images.layout(tag, `provenance ${tag}`);
    await signLayout(layout, 'ghcr.io/example/app', RELEASE_KEY);
    const digest = await registry.push(layout, 'example/app', tag);
    const bundle = await attestImage(
      'ghcr.io/example/app',
      digest,
      SLSA_PROVENANCE_PREDICATE_TYPE,
      predicate(builder),
      attester,
    );
    await registry.attach(
      'example/app',
      digest,
      Buffer.from(JSON.stringify(bundle)),
      SIGSTORE_BUNDLE_MEDIA_TYPE,
      PROVENANCE_ANNOTATIONS,
    );
    return `ghcr.io/example/app@${digest}`;
  };

  beforeAll(async () => {
    attested = await signedAndAttested('attested', IMAGE_BUILDER_ID, RELEASE_KEY);
    otherBuilder = await signedAndAttested('other-builder', 'https://ci.example/untrusted-builder@v1', RELEASE_KEY);
    strangerAttested = await signedAndAttested('stranger-attested', IMAGE_BUILDER_ID, STRANGER_KEY);
  }, 120_000);

  it('accepts an image whose provenance, by the same key, names a trusted builder and source, and records both', async () => {
    const {
      verified: [v],
    } = await verifyImages([attested], trusted, client);
    expect(v).toMatchObject({
      image: attested,
      signedBy: RELEASE_KEY.verifierKey,
      provenance: { builder: IMAGE_BUILDER_ID, source: SOURCE, attestation: expect.stringMatching(/^sha256:/) },
    });
    expect(v!.provenance!.attestation).not.toBe(v!.signature);
  });

  it('refuses a signed image without provenance, by another builder or source, or attested by another key', async () => {
    const SUFFIX = `; attach one (cosign attest --type slsaprovenance1, pnpm image:build --sign-key) or pass --insecure-skip-image-verify to push it unverified (recorded in the audit event)`;
    expect(await refusal([ref('signed')], trusted)).toBe(
      `image ${ref('signed')}: signed by ${RELEASE_KEY.verifierKey}, but profile app: imageTrust requires SLSA provenance and its registry lists no provenance attestation of it${SUFFIX}`,
    );
    expect(await refusal([otherBuilder], trusted)).toMatch(
      / and no attestation holds: attestation sha256:[0-9a-f]{64}: built by https:\/\/ci\.example\/untrusted-builder@v1, which is not a trusted builder \(https:\/\/baton\.dev\/image-build\/pnpm-image-build@v1\)/,
    );
    const otherSource = withProvenance({
      builders: [IMAGE_BUILDER_ID],
      sources: ['git+https://github.com/else/where'],
    });
    expect(await refusal([attested], otherSource)).toContain(
      `built from ${SOURCE}, which is not a trusted source (git+https://github.com/else/where)`,
    );
    expect(await refusal([strangerAttested], trusted)).toMatch(
      new RegExp(
        `attestation sha256:[0-9a-f]{64}: signed by baton\\.dev/release\\+${STRANGER_KEY.keyId.toString('hex')}, which the trusted-keys file does not list`,
      ),
    );
    // Without the provenance rule, the same images verify by their signature alone.
    expect((await verifyImages([otherBuilder, strangerAttested], policyOf(RELEASE_KEY), client)).verified).toHaveLength(
      2,
    );
  });
});

describe('keyless signatures: a certificate for an OIDC identity, checked against an offline trusted root', () => {
  // A private Sigstore (a CA in Fulcio's place, a CT log and a transparency log key) issues the certificates and log
  // entries in process; sigstore-js verifies them as it would the public Sigstore's. The images are in the same real
  // registry, their bundles attached after the push (as `cosign sign` does).
  const { issuer: ISSUER, subject: WORKFLOW } = RELEASE_WORKFLOW;
  const RELEASES = String.raw`https://github\.com/example/app/\.github/workflows/release\.yml@refs/tags/v[0-9.]+`;
  let sigstore: LocalSigstore;
  let rootFile: string;
  const keyless: Record<'release' | 'evil' | 'otherRoot', string> = { release: '', evil: '', otherRoot: '' };

  /** Pushes a fresh one-layer image and attaches `sign`'s bundle for it; returns its reference. */
  async function pushSigned(tag: string, sign: (digest: string) => Promise<unknown>): Promise<string> {
    const digest = await registry.push(images.layout(tag, `keyless ${tag}`).layout, 'example/app', tag);
    const bundle = Buffer.from(JSON.stringify(await sign(digest)));
    await registry.attach('example/app', digest, bundle, SIGSTORE_BUNDLE_MEDIA_TYPE, SIGNATURE_ANNOTATIONS);
    return `ghcr.io/example/app@${digest}`;
  }

  beforeAll(async () => {
    sigstore = images.sigstore;
    rootFile = join(dir, 'trusted_root.json');
    writeFileSync(rootFile, JSON.stringify(sigstore.trustedRoot));
    const other = await createLocalSigstore();
    const as = (s: LocalSigstore, subject: string) => (d: string) =>
      s.signImage('ghcr.io/example/app', d, { issuer: ISSUER, subject });
    keyless.release = ref('keyless');
    keyless.evil = await pushSigned(
      'keyless-evil',
      as(sigstore, 'https://github.com/evil/app/.github/workflows/release.yml@refs/tags/v1.2.3'),
    );
    keyless.otherRoot = await pushSigned('keyless-other-root', as(other, WORKFLOW));
  });

  const keylessPolicy = async (identities: KeylessIdentity[], keys?: SigningKey): Promise<ImageTrustPolicy> => ({
    source: 'push.images.keyless (trusted_root.json)',
    keyless: await keylessTrust(readFileSync(rootFile, 'utf8'), rootFile, identities),
    ...(keys ? { keys: policyOf(keys).keys } : {}),
  });
  const releases = [{ issuer: ISSUER, subjectRegExp: RELEASES }];

  it('accepts the release workflow by pattern or exactly, and records who signed it', async () => {
    for (const identities of [releases, [{ issuer: ISSUER, subject: WORKFLOW }]]) {
      const {
        verified: [v],
      } = await verifyImages([keyless.release], await keylessPolicy(identities), client);
      expect(v).toMatchObject({ image: keyless.release, signedBy: `${WORKFLOW} from ${ISSUER}` });
    }
  });

  it('refuses another identity of the same root, or the right one from another issuer', async () => {
    const err = await verifyImages([keyless.evil], await keylessPolicy(releases), client).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageVerifyError);
    expect((err as Error).message).toContain(
      `signed by https://github.com/evil/app/.github/workflows/release.yml@refs/tags/v1.2.3 (issuer ${ISSUER}), which no trusted identity matches (/${RELEASES}/ from ${ISSUER})`,
    );
    const wrongIssuer = [{ issuer: 'https://accounts.google.com', subject: WORKFLOW }];
    const err2 = await verifyImages([keyless.release], await keylessPolicy(wrongIssuer), client).catch(
      (e: unknown) => e,
    );
    expect((err2 as Error).message).toContain('which no trusted identity matches');
    // A pattern matches the whole subject: a prefix is not enough.
    const prefix = [{ issuer: ISSUER, subjectRegExp: 'https://github\\.com/example/app' }];
    const err3 = await verifyImages([keyless.release], await keylessPolicy(prefix), client).catch((e: unknown) => e);
    expect((err3 as Error).message).toContain('which no trusted identity matches');
  });

  it('refuses a certificate another Sigstore issued', async () => {
    const err = await verifyImages([keyless.otherRoot], await keylessPolicy(releases), client).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(
      new RegExp(
        `its certificate does not verify .*no valid certificate path found; checked against the trusted root ${rootFile.replace(/[.]/g, '\\.')}`,
      ),
    );
  });

  it('keeps keys and identities apart: each policy refuses the other kind, a policy with both accepts either', async () => {
    const keysOnly = await refusal([keyless.release]);
    expect(keysOnly).toContain(': keyless (a certificate), and profile app: imageTrust trusts keys only');
    const keylessOnly = await verifyImages([ref('signed')], await keylessPolicy(releases), client).catch(
      (e: unknown) => e,
    );
    expect((keylessOnly as Error).message).toContain(
      ': signed by a key, and push.images.keyless (trusted_root.json) trusts keyless identities only',
    );
    expect((keylessOnly as Error).message).toContain('no signature verifies with the identities of');
    const both = await verifyImages(
      [ref('signed'), keyless.release],
      await keylessPolicy(releases, RELEASE_KEY),
      client,
    );
    expect(both.verified.map((v) => v.signedBy)).toEqual([RELEASE_KEY.verifierKey, `${WORKFLOW} from ${ISSUER}`]);
  });

  it("verifies cosign v2's keyless signatures (the sha256-<hex>.sig tag), refusing another identity or image", async () => {
    // What images signed before cosign v3 carry: the simple-signing payload as a layer of the `.sig` tag, the
    // certificate, chain and Rekor entry (hashedrekord, signed entry timestamp) in the layer's annotations.
    const v2 = async (
      tag: string,
      sign: (digest: string) => Promise<{ payload: Buffer; annotations: Record<string, string> }>,
    ) => {
      const digest = await registry.push(images.layout(tag, `cosign v2 ${tag}`).layout, 'example/app', tag);
      const { payload, annotations } = await sign(digest);
      await putCosignV2Signature(registry.host, 'example/app', digest, payload, annotations);
      return `ghcr.io/example/app@${digest}`;
    };
    const byRelease = await v2('v2-release', (d) =>
      sigstore.signImageCosignV2('ghcr.io/example/app', d, { issuer: ISSUER, subject: WORKFLOW }),
    );
    const {
      verified: [v],
    } = await verifyImages([byRelease], await keylessPolicy(releases), client);
    expect(v).toMatchObject({ image: byRelease, signedBy: `${WORKFLOW} from ${ISSUER}` });
    const byEvil = await v2('v2-evil', (d) =>
      sigstore.signImageCosignV2('ghcr.io/example/app', d, { issuer: ISSUER, subject: 'https://github.com/evil/x' }),
    );
    const evil = await verifyImages([byEvil], await keylessPolicy(releases), client).catch((e: Error) => e.message);
    expect(evil).toMatch(
      /: cosign v2 signature sha256:[0-9a-f]{64}: signed by https:\/\/github\.com\/evil\/x \(issuer /,
    );
    // A valid v2 signature of the release image, copied to another image's `.sig` tag.
    const releaseDigest = byRelease.split('@')[1]!;
    const copied = await v2('v2-copied', () =>
      sigstore.signImageCosignV2('ghcr.io/example/app', releaseDigest, { issuer: ISSUER, subject: WORKFLOW }),
    );
    const copiedErr = await verifyImages([copied], await keylessPolicy(releases), client).catch(
      (e: Error) => e.message,
    );
    expect(copiedErr).toContain(`signs ${releaseDigest}, not ${copied.split('@')[1]}: a signature of another image`);
    // Logged by a log the root does not list.
    const rogue = await v2('v2-rogue', (d) =>
      sigstore.signImageCosignV2('ghcr.io/example/app', d, { issuer: ISSUER, subject: WORKFLOW }, { rogueLog: true }),
    );
    const rogueErr = await verifyImages([rogue], await keylessPolicy(releases), client).catch((e: Error) => e.message);
    expect(rogueErr).toContain('its transparency log entry is not signed by a log of the root');
    const keysOnly = await refusal([byRelease]);
    expect(keysOnly).toContain(': profile app: imageTrust trusts keys only, which baton verifies in cosign v3 bundles');
  });

  it('refuses bundles whose certificate, log entry or payload do not hold, each saying what failed', async () => {
    const trust = (await keylessPolicy(releases)).keyless!;
    const digest = `sha256:${'c'.repeat(64)}`;
    const signer = { issuer: ISSUER, subject: WORKFLOW };
    const sign = (o?: KeylessSignOptions) => sigstore.signImage('ghcr.io/example/app', digest, signer, o);
    const failure = async (bundle: unknown, d = digest) => {
      try {
        await verifyKeylessImageSignature(bundle, d, trust, 'sig');
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('verified');
    };
    expect((await verifyKeylessImageSignature(await sign(), digest, trust, 'sig')).subject).toBe(WORKFLOW);
    expect(await failure(await sign({ noSct: true }))).toMatch(
      /^sig: its certificate does not verify .*: expected 1 SCTs, got 0;/,
    );
    expect(await failure(await sign({ loggedAfterExpiry: 60 }))).toMatch(
      /^sig: its certificate does not verify .*certificate is not valid or expired at the specified date;/,
    );
    expect(await failure(await sign({ rogueLog: true }))).toMatch(
      /^sig: its transparency log entry is not signed by a log of the root: inclusion promise could not be verified;/,
    );
    expect(await failure(await sign(), `sha256:${'d'.repeat(64)}`)).toContain(': a signature of another image');
    // Another statement in the envelope: the log entry names the first one's payload hash.
    const tampered = (await sign()) as { dsseEnvelope: { payload: string } };
    tampered.dsseEnvelope.payload = imageSignatureStatement('ghcr.io/example/app', `sha256:${'d'.repeat(64)}`).toString(
      'base64',
    );
    expect(await failure(tampered, `sha256:${'d'.repeat(64)}`)).toMatch(
      /^sig: (its transparency log entry is of another signature|the signature does not verify)/,
    );
  });
});

describe("a registry that wants a login: the operator's Docker config", () => {
  // Distribution with htpasswd (bcrypt), the same signed image: baton reads it with the login `docker login` wrote.
  const PASSWORD = 'registry-pass-never-printed';
  let locked: LocalRegistry;
  let image: string;
  let home: string;

  beforeAll(async () => {
    locked = await startRegistry({ dir: join(dir, 'locked'), auth: { username: 'alice', password: PASSWORD } });
    const { layout } = images.layout('signed', 'one');
    await signLayout(layout, 'ghcr.io/example/app', RELEASE_KEY);
    image = `ghcr.io/example/app@${await locked.push(layout, 'example/app', 'signed')}`;
    home = join(dir, 'operator');
    mkdirSync(join(home, '.docker'), { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await locked?.stop();
  });

  const withLogin = (password: string | undefined) => {
    const auths = password ? { [locked.host]: { auth: Buffer.from(`alice:${password}`).toString('base64') } } : {};
    writeFileSync(join(home, '.docker', 'config.json'), JSON.stringify({ auths }));
    return new RegistryClient({
      mirrors: { 'ghcr.io': `http://${locked.host}` },
      credentials: dockerConfigCredentials({ env: { HOME: home } }),
    });
  };

  it('verifies with the login, and without one says where a login would go', async () => {
    const {
      verified: [v],
    } = await verifyImages([image], policyOf(RELEASE_KEY), withLogin(PASSWORD));
    expect(v).toMatchObject({ image, signedBy: RELEASE_KEY.verifierKey });
    const err = await verifyImages([image], policyOf(RELEASE_KEY), withLogin(undefined)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageVerifyError);
    expect((err as Error).message).toContain(
      `cannot read its signatures: http://${locked.host} requires credentials to read example/app (Basic); baton found no login for ${locked.host} in ${join(home, '.docker', 'config.json')}: run \`docker login ${locked.host}\``,
    );
  });

  it('refuses a stale login naming the file it came from, and no message carries a password', async () => {
    const err = await verifyImages([image], policyOf(RELEASE_KEY), withLogin(`${PASSWORD}-old`)).catch(
      (e: unknown) => e,
    );
    expect((err as Error).message).toContain(
      `http://${locked.host} refused the login from ${join(home, '.docker', 'config.json')} (auths) for example/app (401)`,
    );
    expect((err as Error).message).not.toContain(PASSWORD);
  });
});
