import { describe, expect, it } from 'vitest';
import { parseLsRemote, pickRevision, refCandidates } from './git-revision.js';

const MAIN = 'a'.repeat(40);
const DEV_MAIN = 'b'.repeat(40);
const TAG_OBJECT = 'c'.repeat(40);
const TAGGED = 'd'.repeat(40);
const LIGHT = 'e'.repeat(40);

// What `git ls-remote` prints for a repository with main, dev/main, an annotated and a lightweight tag.
const LISTING = [
  `${DEV_MAIN}\trefs/heads/dev/main`,
  `${MAIN}\trefs/heads/main`,
  `${TAG_OBJECT}\trefs/tags/v1`,
  `${TAGGED}\trefs/tags/v1^{}`,
  `${LIGHT}\trefs/tags/light`,
  '',
].join('\n');

describe('parseLsRemote', () => {
  it('reads ref name and object id per line, keeping peeled lines apart, and skips anything else', () => {
    const refs = parseLsRemote(`${LISTING}warning: redirecting to https://x\nnot-a-sha\trefs/heads/x\n`);
    expect([...refs.entries()]).toEqual([
      ['refs/heads/dev/main', DEV_MAIN],
      ['refs/heads/main', MAIN],
      ['refs/tags/v1', TAG_OBJECT],
      ['refs/tags/v1^{}', TAGGED],
      ['refs/tags/light', LIGHT],
    ]);
  });
});

describe('pickRevision', () => {
  const refs = parseLsRemote(LISTING);

  it('matches the exact branch: main is not dev/main, whichever is listed first', () => {
    expect(pickRevision(refs, 'main')).toEqual({ commit: MAIN, ref: 'refs/heads/main' });
    expect(pickRevision(refs, 'dev/main')).toEqual({ commit: DEV_MAIN, ref: 'refs/heads/dev/main' });
    expect(pickRevision(parseLsRemote(`${DEV_MAIN}\trefs/heads/dev/main\n`), 'main')).toBeUndefined();
  });

  it('peels an annotated tag to its commit; a lightweight tag is the commit', () => {
    expect(pickRevision(refs, 'v1')).toEqual({ commit: TAGGED, ref: 'refs/tags/v1' });
    expect(pickRevision(refs, 'refs/tags/v1')).toEqual({ commit: TAGGED, ref: 'refs/tags/v1' });
    expect(pickRevision(refs, 'light')).toEqual({ commit: LIGHT, ref: 'refs/tags/light' });
  });

  it('tries the full ref, then a branch, then a tag, then a commit id', () => {
    const both = parseLsRemote(`${MAIN}\trefs/heads/x\n${LIGHT}\trefs/tags/x\n${DEV_MAIN}\trefs/heads/refs/tags/x\n`);
    expect(pickRevision(both, 'x')).toEqual({ commit: MAIN, ref: 'refs/heads/x' });
    expect(pickRevision(both, 'refs/tags/x')).toEqual({ commit: LIGHT, ref: 'refs/tags/x' });
    expect(refCandidates('main')).toEqual(['refs/heads/main', 'refs/tags/main']);
    expect(refCandidates('refs/heads/main')).toEqual([
      'refs/heads/main',
      'refs/heads/refs/heads/main',
      'refs/tags/refs/heads/main',
    ]);
    const commit = 'f'.repeat(40);
    expect(pickRevision(refs, commit)).toEqual({ commit, ref: undefined });
    // A branch named like a commit id wins over reading it as a commit id.
    expect(pickRevision(parseLsRemote(`${MAIN}\trefs/heads/${commit}\n`), commit)?.commit).toBe(MAIN);
  });

  it('finds nothing for a missing ref, a short commit id or a pattern', () => {
    expect(pickRevision(refs, 'release')).toBeUndefined();
    expect(pickRevision(refs, 'abc1234')).toBeUndefined();
    expect(pickRevision(refs, '*')).toBeUndefined();
    expect(pickRevision(refs, 'heads/main')).toBeUndefined();
  });
});
