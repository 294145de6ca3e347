import { execFileSync } from 'node:child_process';

export { SLSA_PROVENANCE_PREDICATE_TYPE } from '@baton/audit';

/** What `pnpm image:build` does, as SLSA names a build's type; its parameters are below. */
export const IMAGE_BUILD_TYPE = 'https://baton.dev/image-build/v1';
/** The builder: baton's image build run from a checkout (`scripts/image-build.ts`), not a hosted build service. */
export const IMAGE_BUILDER_ID = 'https://baton.dev/image-build/pnpm-image-build@v1';

/** Where an image was built from: the repository and the commit checked out. */
export interface BuildSource {
  /** e.g. `git+https://github.com/baton-dev/baton`. */
  readonly uri: string;
  /** The commit checked out (40 hex digits). */
  readonly commit: string;
  /** False when the checkout had changes the commit does not hold: the image is then not what the commit builds. */
  readonly clean: boolean;
}

/** baton's repository, as its images' provenance names their source. */
export const BATON_SOURCE_URI = 'git+https://github.com/baton-dev/baton';

/**
 * The commit checked out at `repoRoot` and whether the worktree holds changes it does not (untracked files aside).
 * @throws when `repoRoot` is not a Git checkout.
 */
export function gitBuildSource(repoRoot: string): BuildSource {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8' }).trim();
  return {
    uri: BATON_SOURCE_URI,
    commit: git('rev-parse', 'HEAD'),
    clean: git('status', '--porcelain', '--untracked-files=no') === '',
  };
}

interface SpdxPackage {
  readonly SPDXID?: string;
  readonly checksums?: readonly { readonly algorithm?: string; readonly checksumValue?: string }[];
  readonly externalRefs?: readonly { readonly referenceType?: string; readonly referenceLocator?: string }[];
}

/**
 * The SLSA provenance v1 predicate of an image built by `pnpm image:build`: the source commit as the external
 * parameter, and as resolved dependencies every package the image's SBOM lists (Debian packages, Node.js, the bundled
 * npm packages) by purl and checksum. No timestamps: the same build gives the same predicate.
 * @param sbom the image's SPDX 2.3 document (what the layout carries as a referrer).
 */
export function imageProvenance(entry: string, source: BuildSource, sbom: unknown): unknown {
  const packages = ((sbom as { packages?: SpdxPackage[] }).packages ?? []).filter((p) => p.SPDXID !== 'SPDXRef-Image');
  return {
    buildDefinition: {
      buildType: IMAGE_BUILD_TYPE,
      externalParameters: {
        source: { uri: source.uri, digest: { gitCommit: source.commit } },
        entry,
      },
      internalParameters: { worktreeClean: source.clean },
      resolvedDependencies: packages.map((p) => {
        const purl = p.externalRefs?.find((r) => r.referenceType === 'purl')?.referenceLocator ?? '';
        const digest = Object.fromEntries(
          (p.checksums ?? [])
            .filter((c) => c.algorithm && c.checksumValue)
            .map((c) => [c.algorithm!.toLowerCase(), c.checksumValue!]),
        );
        return { uri: purl, ...(Object.keys(digest).length > 0 ? { digest } : {}) };
      }),
    },
    runDetails: { builder: { id: IMAGE_BUILDER_ID } },
  };
}
