import { describe, expect, it } from 'vitest';
import { checkProvenance } from './provenance-policy.js';

const BATON = 'https://baton.dev/image-build/pnpm-image-build@v1';
const GITHUB = 'https://github.com/actions/runner/github-hosted';

describe('checkProvenance', () => {
  const baton = {
    buildDefinition: { externalParameters: { source: { uri: 'git+https://github.com/baton-dev/baton' } } },
    runDetails: { builder: { id: BATON } },
  };
  const actions = {
    buildDefinition: {
      externalParameters: { workflow: { repository: 'https://github.com/fluxcd/source-controller', path: 'x' } },
    },
    runDetails: { builder: { id: GITHUB } },
  };

  it("reads the builder, and the source from baton's build type or a GitHub Actions workflow", () => {
    expect(checkProvenance(baton, { builders: [BATON] })).toEqual({
      builder: BATON,
      source: 'git+https://github.com/baton-dev/baton',
    });
    expect(
      checkProvenance(actions, { builders: [BATON, GITHUB], sources: ['https://github.com/fluxcd/source-controller'] }),
    ).toEqual({ builder: GITHUB, source: 'https://github.com/fluxcd/source-controller' });
  });

  it('says why it refuses: no builder, an untrusted builder or source, no source when sources are listed', () => {
    expect(checkProvenance({}, { builders: [BATON] })).toBe('it names no builder (runDetails.builder.id)');
    expect(checkProvenance(null, { builders: [BATON] })).toBe('it names no builder (runDetails.builder.id)');
    expect(checkProvenance(actions, { builders: [BATON] })).toBe(
      `built by ${GITHUB}, which is not a trusted builder (${BATON})`,
    );
    expect(checkProvenance(baton, { builders: [BATON], sources: ['git+https://github.com/else/where'] })).toBe(
      'built from git+https://github.com/baton-dev/baton, which is not a trusted source (git+https://github.com/else/where)',
    );
    expect(checkProvenance({ runDetails: baton.runDetails }, { builders: [BATON], sources: ['s'] })).toMatch(
      /^it names no source/,
    );
  });
});
