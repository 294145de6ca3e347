import type { KubeObject } from '@baton/kube/plan';
import type { ManifestObject } from './manifest.js';

/** The violations of one manifest set, each naming the file, document and line. */
export class Violations {
  readonly problems: string[] = [];

  /** A problem of the set as a whole (something missing). */
  add(problem: string): void {
    this.problems.push(problem);
  }

  /** A problem of one object: `rule` follows the object's kind and name. */
  refuse(m: ManifestObject, rule: string): void {
    this.problems.push(`${where(m)}: ${describeSafe(m.object)} ${rule}`);
  }
}

export function where(m: ManifestObject): string {
  return `${m.file}#${m.doc} (line ${m.line})`;
}

/** What the set declares, by kind and name. */
export class DeclaredObjects {
  constructor(private readonly objects: readonly ManifestObject[]) {}

  has(kind: string, name: string): boolean {
    return this.objects.some((x) => x.object.kind === kind && x.object.metadata.name === name);
  }
}

function describeSafe(o: Partial<KubeObject>): string {
  const name = o.metadata?.name ?? '?';
  return o.metadata?.namespace ? `${o.kind} "${o.metadata.namespace}/${name}"` : `${o.kind} "${name}"`;
}
