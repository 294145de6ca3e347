// Regenerates an image lock's `debs` from this machine's apt index: the Depends and Pre-Depends closure of the lock's
// `roots`, less its `leftOut` (each with its reason), each at apt's candidate version with the sha256 and path the
// archive gives.
// Usage: pnpm image:lock-debs [LOCK...]   (default: every image lock; run `apt-get update` first, review the diff,
// then `pnpm image:build --pin`)
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ImageLock, LockedDeb } from './inputs.js';

/** Every image lock in the repository, relative to its root. */
export const IMAGE_LOCKS = [
  'packages/controller/image/image.lock.json',
  'packages/cli/image/image.lock.json',
  'packages/testenv/src/argocd/argocd.lock.json',
  'packages/testenv/src/argocd/redis.lock.json',
] as const;

const apt = (args: string[]): string => execFileSync('apt-cache', args, { encoding: 'utf8', maxBuffer: 64 << 20 });

/** The direct Depends and Pre-Depends of `name` (the first of each set of alternatives; virtual ones dropped). */
function dependsOf(name: string): string[] {
  const out: string[] = [];
  let alternative = false;
  for (const line of apt(['depends', '--no-recommends', '--no-suggests', name]).split('\n').slice(1)) {
    const m = /^\s*(\|)?(Depends|PreDepends|Pre-Depends): (\S+)/.exec(line);
    if (!m) {
      alternative = false;
      continue;
    }
    // `|Depends: a` means "a, or the next line": take a, skip the rest of the set.
    if (!alternative && !m[3]!.startsWith('<')) out.push(m[3]!.replace(/:any$/, ''));
    alternative = m[1] === '|';
  }
  return out;
}

/** The roots' closure, sorted by name. */
export function closure(roots: readonly string[], leftOut: ReadonlySet<string>): string[] {
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (seen.has(name) || leftOut.has(name)) continue;
    seen.add(name);
    queue.push(...dependsOf(name));
  }
  return [...seen].sort();
}

/** The candidate version of `name`, with the sha256 and archive path apt has for it. */
function locked(name: string): LockedDeb {
  const candidate = /Candidate: (\S+)/.exec(apt(['policy', name]))?.[1];
  if (!candidate || candidate === '(none)')
    throw new Error(`${name}: apt has no candidate version; run apt-get update`);
  const record = apt(['show', `${name}=${candidate}`]).split('\n\n')[0]!;
  const field = (f: string) => {
    const v = new RegExp(`^${f}: (.+)$`, 'm').exec(record)?.[1];
    if (!v) throw new Error(`${name}=${candidate}: apt-cache show has no ${f}`);
    return v.trim();
  };
  return {
    name,
    version: candidate,
    arch: field('Architecture'),
    sha256: field('SHA256'),
    filename: field('Filename'),
  };
}

/**
 * Locks the closure of `lockPath`'s roots again and rewrites its `debs`.
 * @returns one line per package whose version changed, was added or was removed.
 * @throws Error when the lock has no `roots`, or apt lacks a package.
 */
export function lockDebs(lockPath: string): string[] {
  const lock = JSON.parse(readFileSync(lockPath, 'utf8')) as ImageLock & Record<string, unknown>;
  if (!lock.roots?.length) throw new Error(`${lockPath}: no \`roots\`: list the Debian packages the image needs`);
  const before = new Map(lock.debs.map((d) => [d.name, d.version]));
  const debs = closure(lock.roots, new Set(Object.keys(lock.leftOut ?? {}))).map(locked);
  writeFileSync(lockPath, `${JSON.stringify({ ...lock, debs }, null, 2)}\n`);
  const changes: string[] = [];
  for (const d of debs) {
    const was = before.get(d.name);
    if (was !== d.version) changes.push(`${lockPath}: ${d.name}: ${was ?? '(new)'} -> ${d.version}`);
    before.delete(d.name);
  }
  for (const name of before.keys()) changes.push(`${lockPath}: ${name}: removed`);
  return changes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const repo = fileURLToPath(new URL('../../../', import.meta.url));
  const locks = process.argv.slice(2);
  const all = locks.length > 0 ? locks : IMAGE_LOCKS.map((l) => join(repo, l));
  for (const l of all) for (const line of lockDebs(l)) process.stdout.write(`${line}\n`);
}
