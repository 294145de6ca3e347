import { describe, expect, it } from 'vitest';
import { mergeJournal } from './target-journal.js';
import { buildWaveJob, parseIndexes, SHARD_CONFIG_ERROR_EXIT } from './wave-job.js';

describe('wave Job', () => {
  const base = {
    name: 'fleet-1-w1',
    namespace: 'baton-fleet',
    fleetRunId: 'fleet-1',
    wave: 1,
    image: 'ghcr.io/baton-dev/baton:1',
    serviceAccountName: 'baton-fleet-shard',
    args: ['fleet', 'shard', '--wave', 'fleet-1-w1', '--namespace', 'baton-fleet'],
  };

  it('maps the rollout rules onto the Job controller’s own fields', () => {
    const job = buildWaveJob({ ...base, completions: 7, parallelism: 4, retries: 2, budgetLeft: 1 });
    expect(job.spec).toMatchObject({
      completionMode: 'Indexed',
      completions: 7,
      parallelism: 4,
      backoffLimitPerIndex: 2,
      maxFailedIndexes: 1,
      podReplacementPolicy: 'Failed',
      podFailurePolicy: {
        rules: [
          {
            action: 'FailJob',
            onExitCodes: { containerName: 'shard', operator: 'In', values: [SHARD_CONFIG_ERROR_EXIT] },
          },
        ],
      },
    });
    expect(job.spec?.template.spec).toMatchObject({ restartPolicy: 'Never', serviceAccountName: 'baton-fleet-shard' });
    expect(job.spec?.template.spec?.containers[0]?.args).toEqual(base.args);
    // The shard names itself by its pod in the target's lock (the hostname is shared by the pods of an index).
    expect(job.spec?.template.spec?.containers[0]?.env).toEqual([
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
  });

  it('caps parallelism and maxFailedIndexes at the wave size (the API refuses more)', () => {
    const job = buildWaveJob({ ...base, completions: 2, parallelism: 10, retries: 0, budgetLeft: 50 });
    expect(job.spec).toMatchObject({ parallelism: 2, maxFailedIndexes: 2 });
  });

  it('reads completedIndexes and failedIndexes', () => {
    expect([...parseIndexes('0-2,5,7-8')]).toEqual([0, 1, 2, 5, 7, 8]);
    expect(parseIndexes(undefined).size).toBe(0);
    expect(parseIndexes('').size).toBe(0);
  });

  it('merges an append-only journal without losing or repeating an entry', () => {
    expect(mergeJournal('a\nb\n', 'a\nb\nc\n')).toBe('a\nb\nc\n');
    expect(mergeJournal('a\nb\nx\n', 'a\nb\nc\n')).toBe('a\nb\nx\nc\n');
    expect(mergeJournal(undefined, '')).toBe('');
  });
});
