// Regenerates image.lock.json's `debs` from this machine's apt index: the Depends and Pre-Depends closure of the
// image's roots (git over HTTPS, CA certificates, libstdc++ for Node.js), less what only a package manager or a shell
// user needs, each at apt's candidate version with the sha256 and path the archive gives.
// Usage: pnpm image:lock-debs   (run `apt-get update` first; review the diff, then `pnpm image:build --pin`)
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ImageLock, LockedDeb } from './inputs.js';

const LOCK = fileURLToPath(new URL('./image.lock.json', import.meta.url));

/** What the controller runs: git (its HTTP transport too), the CA bundle, and Node.js's C++ runtime. */
export const ROOTS = ['git', 'ca-certificates', 'libstdc++6'];

/**
 * Dependencies the image does without: Perl (git's Perl-based commands, never run), git's manual pages, the package
 * manager and its configuration (the image is never updated in place), and the openssl command (ca-certificates
 * needs it only to rebuild the bundle, which the package ships built).
 */
export const LEFT_OUT = new Set([
  'perl',
  'perl-base',
  'liberror-perl',
  'git-man',
  'debconf',
  'cdebconf',
  'dpkg',
  'install-info',
  'tar',
  'openssl',
]);

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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const lock = JSON.parse(readFileSync(LOCK, 'utf8')) as ImageLock & Record<string, unknown>;
  const before = new Map(lock.debs.map((d) => [d.name, d.version]));
  const debs = closure(ROOTS, LEFT_OUT).map(locked);
  writeFileSync(LOCK, `${JSON.stringify({ ...lock, debs }, null, 2)}\n`);
  for (const d of debs) {
    const was = before.get(d.name);
    if (was !== d.version) process.stdout.write(`${d.name}: ${was ?? '(new)'} -> ${d.version}\n`);
    before.delete(d.name);
  }
  for (const name of before.keys()) process.stdout.write(`${name}: removed\n`);
}
