import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fillSource as fill, type LoadedProfile, loadProfile, pushOnlyReason } from '@baton/core/profile';
import { ConfigError } from '@baton/errors';
import { parseAllDocuments } from 'yaml';

/** The Git source a push set is rendered for (a plan's `pull.source`). */
export interface RenderSource {
  readonly url: string;
  readonly ref: string;
  readonly path: string;
}

/**
 * The folder of a profile shipped with this baton, looked for upwards of this module: `profiles/<profile>` of the
 * installed package (`pnpm pack` copies them there), or `bootstrap-manifests/<profile>` of the repository; undefined
 * when there is neither (pass `--from`).
 */
export function shippedProfileDir(profile: string, from = dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    for (const folder of ['profiles', 'bootstrap-manifests']) {
      const candidate = join(dir, folder, profile);
      if (existsSync(join(candidate, 'rules', 'profile.yaml'))) return candidate;
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Writes the push set of a profile for `source` into `pushDir`: every top-level `*.yaml` of `profileDir` with the
 * fields the profile's `controller.source` names set from `source`, and `rules/profile.yaml` beside them (where the
 * handoff finds the takeover rules and the controller block). With `gitDir`, also what Git carries: the same files
 * without the objects the profile keeps push-only (Flux's CRDs and RBAC, which its scoped reconciler cannot apply:
 * committed to Git, they would keep the root Kustomization from ever becoming Ready).
 * @throws {ConfigError} when the profile has no controller block, a source field's object is missing from the set,
 * or a CRD the profile waits for is not in the set (e.g. Flux's generated CRDs file).
 */
export function renderPushSet(
  profileDir: string,
  pushDir: string,
  source: RenderSource,
  gitDir?: string,
): LoadedProfile {
  const loaded = loadProfile(profileDir);
  const block = loaded.profile.controller;
  if (!block)
    throw new ConfigError(
      `${loaded.file} has no controller block (controller: name, serviceAccount, pullSecret, source); add it to render a plan for profile ${loaded.profile.name}`,
    );
  const files = readdirSync(profileDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  const rendered = new Map<string, string>();
  const carried = new Map<string, string>();
  const unset = new Set(block.source.map((f) => `${f.kind}/${f.name} ${f.field}`));
  const crds = new Set<string>();
  for (const f of files) {
    const docs = parseAllDocuments(readFileSync(join(profileDir, f), 'utf8'), { version: '1.1' });
    if (!Array.isArray(docs)) throw new ConfigError(`${join(profileDir, f)}: not a YAML stream`);
    for (const doc of docs) {
      const kind = doc.get('kind');
      const name = doc.getIn(['metadata', 'name']);
      if (kind === 'CustomResourceDefinition') crds.add(String(name));
      for (const s of block.source.filter((x) => x.kind === kind && x.name === name)) {
        doc.setIn(s.field.split('.'), fill(s.value, source));
        unset.delete(`${s.kind}/${s.name} ${s.field}`);
      }
    }
    rendered.set(f, docs.map((d) => d.toString()).join('---\n'));
    const inGit = docs.filter(
      (d) =>
        d.get('kind') !== undefined &&
        pushOnlyReason(loaded.profile, String(d.get('kind')), String(d.getIn(['metadata', 'name']))) === undefined,
    );
    if (inGit.length > 0) carried.set(f, inGit.map((d) => d.toString()).join('---\n'));
  }
  if (unset.size > 0)
    throw new ConfigError(
      `${profileDir}: the profile renders ${[...unset].join(', ')}, but the set has no such object; fix controller.source in ${loaded.file} or the manifests`,
    );
  const missing = loaded.profile.crds.filter((c) => !crds.has(c));
  if (missing.length > 0)
    throw new ConfigError(
      `${profileDir}: the profile waits for CRDs ${missing.join(', ')}, which no file of the set defines; add them (for Flux: \`pnpm baton testenv build --flux\` writes 05-crds.generated.yaml) or pass --from a complete set`,
    );
  mkdirSync(join(pushDir, 'rules'), { recursive: true });
  for (const [f, text] of rendered) writeFileSync(join(pushDir, f), text);
  if (gitDir) {
    mkdirSync(gitDir, { recursive: true });
    for (const [f, text] of carried) writeFileSync(join(gitDir, f), text);
  }
  cpSync(loaded.file, join(pushDir, 'rules', 'profile.yaml'));
  return { ...loaded, file: resolve(pushDir, 'rules', 'profile.yaml') };
}
