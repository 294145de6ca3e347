import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProcessError } from '@baton/errors';
import bcrypt from 'bcryptjs';
import { ManagedProcess } from './managed-process.js';
import { freePorts } from './ports.js';

/** Debian's `docker-registry` (CNCF Distribution 2.8), the local OCI registry. */
export const REGISTRY_BINARY = '/usr/bin/docker-registry';

/** OCI and Docker manifest media types a pull accepts. */
export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/** A registry on loopback with its own storage, as {@link startRegistry} starts it. */
export interface LocalRegistry {
  /** `127.0.0.1:PORT`, what image references name as their registry host once mapped. */
  readonly host: string;
  /**
   * Pushes the image an OCI image layout's `index.json` names `ref` (its `org.opencontainers.image.ref.name`) to
   * `repository`, blobs first, then the manifest by its digest and tagged `ref`.
   * @returns the manifest's digest.
   * @throws ProcessError when the layout has no such image or the registry refuses an upload.
   */
  push(layoutDir: string, repository: string, ref: string): Promise<string>;
  /** {@link attachToRegistry} on this registry. */
  attach(
    repository: string,
    subject: string,
    file: Buffer,
    artifactType: string,
    annotations?: Readonly<Record<string, string>>,
  ): Promise<string>;
  /** Process id of the registry (its process group). */
  readonly pid: number;
  /** Stops the registry and removes its storage. */
  stop(): Promise<void>;
}

/** Options of {@link startRegistry}. */
export interface StartRegistryOptions {
  /** The address to bind. @default '127.0.0.1' */
  readonly bindHost?: string;
  /** Runs the registry through this command line (a bed's network namespace). */
  readonly wrap?: (command: string, args: readonly string[]) => { command: string; args: string[] };
  /**
   * Where it keeps its config, storage and log (created; removed on stop). A bed's registry keeps them in the
   * cluster's directory, which its teardown removes even when the process that started it was killed.
   * @default a new directory under the OS temp dir
   */
  readonly dir?: string;
  /** Require this user (Basic authentication, an htpasswd file with a bcrypt hash) for every request. */
  readonly auth?: RegistryAuth;
}

/** A user the registry requires (htpasswd, bcrypt): every read and write then needs these credentials. */
export interface RegistryAuth {
  readonly username: string;
  readonly password: string;
}

/** Where pushes go: the registry's `/v2` base, and a fetch that carries its credentials when it has any. */
interface RegistryTarget {
  readonly base: string;
  readonly fetch: typeof fetch;
}

function target(host: string, auth?: RegistryAuth): RegistryTarget {
  const authorization = auth ? `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` : '';
  return {
    base: `http://${host}/v2`,
    fetch: authorization
      ? (url, init = {}) => fetch(url, { ...init, headers: { ...(init.headers as object), authorization } })
      : fetch,
  };
}

const sha256 = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/**
 * Starts Debian's `docker-registry` on a free loopback port with a temporary storage directory, and waits until
 * it answers `GET /v2/`.
 * @throws ProcessError when the binary is missing (`scripts/setup.sh` installs it) or it does not come up.
 */
export async function startRegistry(options: StartRegistryOptions = {}): Promise<LocalRegistry> {
  if (!existsSync(REGISTRY_BINARY))
    throw new ProcessError(
      `local registry: ${REGISTRY_BINARY} is missing; install Debian's docker-registry (scripts/setup.sh does)`,
    );
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'baton-registry-')));
  await mkdir(dir, { recursive: true });
  const [port] = await freePorts(1);
  const host = `${options.bindHost ?? '127.0.0.1'}:${port}`;
  const config = join(dir, 'config.yml');
  let auth = '';
  if (options.auth) {
    const htpasswd = join(dir, 'htpasswd');
    await writeFile(htpasswd, `${options.auth.username}:${await bcrypt.hash(options.auth.password, 4)}\n`, {
      mode: 0o600,
    });
    auth = `auth:\n  htpasswd:\n    realm: baton-testenv\n    path: ${htpasswd}\n`;
  }
  await writeFile(
    config,
    `version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\nhttp:\n  addr: ${host}\n${auth}`,
  );
  const line = (options.wrap ?? ((command, args) => ({ command, args: [...args] })))(REGISTRY_BINARY, [
    'serve',
    config,
  ]);
  const proc = await ManagedProcess.start({
    name: 'docker-registry',
    command: line.command,
    args: line.args,
    logPath: join(dir, 'registry.log'),
    env: { ...process.env, OTEL_TRACES_EXPORTER: 'none' },
  });
  const base = `http://${host}/v2`;
  try {
    const deadline = performance.now() + 30_000;
    for (;;) {
      if (!proc.isRunning) throw await proc.exitError();
      const ok = await fetch(`${base}/`).then(
        // With auth, 401 with its challenge is the answer of a registry that is up.
        (r) => r.ok || (!!options.auth && r.status === 401),
        () => false,
      );
      if (ok) break;
      if (performance.now() > deadline) throw new ProcessError(`local registry on ${host} did not answer in 30 s`);
      await sleep(100);
    }
  } catch (err) {
    await proc.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    host,
    pid: proc.pid,
    push: (layoutDir, repository, ref) => pushLayout(target(host, options.auth), layoutDir, repository, ref),
    attach: (repository, subject, file, artifactType, annotations) =>
      attachToRegistry(host, repository, subject, file, artifactType, annotations, options.auth),
    async stop() {
      await proc.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Pushes the image `ref` of an OCI layout to the registry at `host` (`ip:port`) as `repository`; returns its digest. */
export function pushToRegistry(host: string, layoutDir: string, repository: string, ref: string): Promise<string> {
  return pushLayout(target(host), layoutDir, repository, ref);
}

async function pushLayout(to: RegistryTarget, layoutDir: string, repository: string, ref: string): Promise<string> {
  const index = JSON.parse(await readFile(join(layoutDir, 'index.json'), 'utf8')) as { manifests: LayoutEntry[] };
  const desc = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === ref);
  if (!desc) throw new ProcessError(`${layoutDir}/index.json: no image named ${ref}; run \`pnpm image:build\``);
  const blob = (digest: string) => readFile(join(layoutDir, 'blobs/sha256', digest.slice('sha256:'.length)));
  const manifestBytes = await blob(desc.digest);
  await putManifest(to, repository, manifestBytes, desc.mediaType, [desc.digest, ref], blob);
  // The image's referrers in the layout (its SBOM, its signatures), then the referrers tag schema's index, which
  // Distribution 2.8 needs: it has no referrers API (cosign and baton fall back to the `sha256-<hex>` tag).
  const referrers: LayoutEntry[] = [];
  for (const entry of index.manifests.filter((m) => m.artifactType)) {
    const bytes = await blob(entry.digest);
    if ((JSON.parse(bytes.toString()) as { subject?: { digest?: string } }).subject?.digest !== desc.digest) continue;
    await putManifest(to, repository, bytes, entry.mediaType, [entry.digest], blob);
    referrers.push(entry);
  }
  if (referrers.length > 0) await putReferrersTag(to, repository, desc.digest, referrers);
  return sha256(manifestBytes);
}

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

/**
 * Attaches `file` to the image `subject` (a digest) already in `repository` of the registry at `host`, as `cosign
 * attach` or `oras attach` do for a signature made after the push: an artifact manifest of `artifactType` whose subject
 * is the image, then its entry in the referrers tag's index (kept beside what the index listed).
 * @returns the referrer manifest's digest.
 * @throws ProcessError when the image is not in the registry or an upload is refused.
 */
export async function attachToRegistry(
  host: string,
  repository: string,
  subject: string,
  file: Buffer,
  artifactType: string,
  annotations: Readonly<Record<string, string>> = {},
  auth?: RegistryAuth,
): Promise<string> {
  const to = target(host, auth);
  const head = await to.fetch(`${to.base}/${repository}/manifests/${subject}`, {
    method: 'HEAD',
    headers: { accept: MANIFEST_ACCEPT },
  });
  if (!head.ok)
    throw new ProcessError(`local registry: ${repository}@${subject} answered ${head.status}; push the image first`);
  const empty = Buffer.from('{}');
  const blobs = new Map([
    [sha256(empty), empty],
    [sha256(file), file],
  ]);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      artifactType,
      config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: sha256(empty), size: empty.length },
      layers: [{ mediaType: artifactType, digest: sha256(file), size: file.length }],
      subject: {
        mediaType: head.headers.get('content-type') ?? OCI_MANIFEST,
        digest: subject,
        size: Number(head.headers.get('content-length')),
      },
      annotations,
    }),
  );
  const digest = sha256(manifest);
  await putManifest(to, repository, manifest, OCI_MANIFEST, [digest], async (d) => blobs.get(d) ?? Buffer.alloc(0));
  await putReferrersTag(to, repository, subject, [
    { digest, mediaType: OCI_MANIFEST, size: manifest.length, artifactType, annotations },
  ]);
  return digest;
}

/**
 * Puts a cosign v2 signature of the image `subject` (a digest) in `repository`: the `sha256-<hex>.sig` tag, a manifest
 * whose layer is the simple-signing `payload` with the signature's `annotations`, as cosign before v3 pushes them.
 */
export async function putCosignV2Signature(
  host: string,
  repository: string,
  subject: string,
  payload: Buffer,
  annotations: Readonly<Record<string, string>>,
  auth?: RegistryAuth,
): Promise<void> {
  const config = Buffer.from(
    JSON.stringify({ architecture: '', os: '', config: {}, rootfs: { type: 'layers', diff_ids: [sha256(payload)] } }),
  );
  const blobs = new Map([
    [sha256(config), config],
    [sha256(payload), payload],
  ]);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
      layers: [
        {
          mediaType: 'application/vnd.dev.cosign.simplesigning.v1+json',
          digest: sha256(payload),
          size: payload.length,
          annotations,
        },
      ],
    }),
  );
  await putManifest(
    target(host, auth),
    repository,
    manifest,
    OCI_MANIFEST,
    [`${subject.replace(':', '-')}.sig`],
    async (d) => blobs.get(d) ?? Buffer.alloc(0),
  );
}

/** An entry of a layout's index.json. */
interface LayoutEntry {
  readonly digest: string;
  readonly mediaType: string;
  readonly size: number;
  readonly artifactType?: string;
  readonly annotations?: Record<string, string>;
}

/** Uploads a manifest's config and layers (those the registry lacks), then the manifest under each of `tags`. */
async function putManifest(
  to: RegistryTarget,
  repository: string,
  manifestBytes: Buffer,
  mediaType: string,
  tags: readonly string[],
  blob: (digest: string) => Promise<Buffer>,
): Promise<void> {
  const manifest = JSON.parse(manifestBytes.toString()) as { config: { digest: string }; layers: { digest: string }[] };
  for (const digest of [manifest.config.digest, ...manifest.layers.map((l) => l.digest)]) {
    if ((await to.fetch(`${to.base}/${repository}/blobs/${digest}`, { method: 'HEAD' })).ok) continue;
    const start = await to.fetch(`${to.base}/${repository}/blobs/uploads/`, { method: 'POST' });
    const location = start.headers.get('location');
    if (start.status !== 202 || !location)
      throw new ProcessError(`local registry: starting an upload to ${repository} answered ${start.status}`);
    const url = new URL(location, to.base);
    url.searchParams.set('digest', digest);
    const data = await blob(digest);
    const put = await to.fetch(url, {
      method: 'PUT',
      body: data,
      headers: { 'content-type': 'application/octet-stream' },
    });
    if (put.status !== 201) throw new ProcessError(`local registry: uploading ${digest} answered ${put.status}`);
  }
  for (const tag of tags) {
    const res = await to.fetch(`${to.base}/${repository}/manifests/${tag}`, {
      method: 'PUT',
      body: manifestBytes,
      headers: { 'content-type': mediaType },
    });
    if (res.status !== 201)
      throw new ProcessError(`local registry: putting manifest ${tag} answered ${res.status}: ${await res.text()}`);
  }
}

/** Adds `referrers` to the `sha256-<hex>` index of `subject` (the referrers tag schema), keeping what it listed. */
async function putReferrersTag(
  to: RegistryTarget,
  repository: string,
  subject: string,
  referrers: readonly LayoutEntry[],
): Promise<void> {
  const url = `${to.base}/${repository}/manifests/${subject.replace(':', '-')}`;
  const existing = await to.fetch(url, { headers: { accept: 'application/vnd.oci.image.index.v1+json' } });
  const listed = existing.ok ? ((await existing.json()) as { manifests: LayoutEntry[] }).manifests : [];
  const manifests = [...listed.filter((m) => !referrers.some((r) => r.digest === m.digest)), ...referrers].map(
    ({ mediaType, digest, size, artifactType, annotations }) => ({
      mediaType,
      digest,
      size,
      ...(artifactType ? { artifactType } : {}),
      ...(annotations ? { annotations: withoutRefName(annotations) } : {}),
    }),
  );
  const body = JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests });
  const res = await to.fetch(url, {
    method: 'PUT',
    body,
    headers: { 'content-type': 'application/vnd.oci.image.index.v1+json' },
  });
  if (res.status !== 201)
    throw new ProcessError(
      `local registry: putting the referrers of ${subject} answered ${res.status}: ${await res.text()}`,
    );
}

/** A layout's tag annotation means nothing in a registry's referrers list. */
function withoutRefName(annotations: Record<string, string>): Record<string, string> {
  const { 'org.opencontainers.image.ref.name': _, ...rest } = annotations;
  return rest;
}
