import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';

/**
 * Pods with this label are finished by the pod runner's Job mode (the real exit code of a local process), not by
 * kwok: kwok's stock `pod-complete` stage would mark every Running pod owned by a Job `Succeeded` with exit 0 at once.
 */
export const POD_RUNNER_JOB_LABEL = 'testenv.baton.dev/pod-runner';

/**
 * Writes the cluster's kwok stage file: kwok's stock stages (extracted from its module zip at build time) with pods
 * labelled {@link POD_RUNNER_JOB_LABEL} left out of `pod-complete`. Returns its path.
 */
export async function writeKwokStages(stockStages: string, dir: string): Promise<string> {
  const docs = parseAllDocuments(await readFile(stockStages, 'utf8'), { version: '1.1' }) as unknown as {
    toJS(): { metadata?: { name?: string }; spec?: { selector?: { matchExpressions?: unknown[] } } } | null;
  }[];
  const out = docs
    .map((d) => d.toJS())
    .filter((s) => s !== null)
    .map((s) => {
      if (s.metadata?.name !== 'pod-complete') return s;
      const exprs = s.spec?.selector?.matchExpressions ?? [];
      return {
        ...s,
        spec: {
          ...s.spec,
          selector: {
            ...s.spec?.selector,
            matchExpressions: [
              ...exprs,
              { key: `.metadata.labels["${POD_RUNNER_JOB_LABEL}"]`, operator: 'DoesNotExist' },
            ],
          },
        },
      };
    });
  const path = join(dir, 'kwok-stages.yaml');
  await writeFile(path, out.map((s) => stringify(s, { version: '1.1', lineWidth: 0 })).join('---\n'));
  return path;
}
