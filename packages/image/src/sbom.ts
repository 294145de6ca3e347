import type { ImageLock } from './inputs.js';

/** A package in the image, as the SBOM lists it. */
export interface SbomPackage {
  readonly name: string;
  readonly version: string;
  /** Package URL (purl). */
  readonly purl: string;
  readonly downloadLocation: string;
  readonly checksum?: { readonly algorithm: 'SHA256' | 'SHA512'; readonly value: string };
}

/** The Debian packages and the Node.js runtime of the lock, as SBOM packages. */
export function lockedPackages(lock: ImageLock): SbomPackage[] {
  const debs = lock.debs.map((d) => ({
    name: d.name,
    version: d.version,
    purl: `pkg:deb/debian/${d.name}@${encodeURIComponent(d.version)}?arch=${d.arch}&distro=debian-12`,
    downloadLocation: `https://deb.debian.org/debian/${d.filename}`,
    checksum: { algorithm: 'SHA256' as const, value: d.sha256 },
  }));
  const n = lock.node;
  if (!n) return debs;
  const node = {
    name: n.package,
    version: n.version,
    purl: `pkg:npm/${n.package}@${n.version}`,
    downloadLocation: `https://registry.npmjs.org/${n.package}/-/${n.package}-${n.version}.tgz`,
    checksum: { algorithm: 'SHA512' as const, value: Buffer.from(n.integrity.slice(7), 'base64').toString('hex') },
  };
  return [...debs, node];
}

/**
 * An SPDX 2.3 document: the image, and every package in it (it CONTAINS each). Its fields depend only on the image
 * and the packages, so the same image gets the same SBOM: `created` is the epoch, not the build time.
 */
export function spdxDocument(imageName: string, imageDigest: string, packages: readonly SbomPackage[]): unknown {
  const id = (i: number) => `SPDXRef-Package-${i}`;
  return {
    spdxVersion: 'SPDX-2.3',
    dataLicense: 'CC0-1.0',
    SPDXID: 'SPDXRef-DOCUMENT',
    name: `${imageName}@${imageDigest}`,
    documentNamespace: `https://baton.dev/spdx/${imageName}/${imageDigest.replace(':', '-')}`,
    creationInfo: { created: '1970-01-01T00:00:00Z', creators: ['Tool: baton image build (pnpm image:build)'] },
    packages: [
      {
        SPDXID: 'SPDXRef-Image',
        name: imageName,
        versionInfo: imageDigest,
        downloadLocation: 'NOASSERTION',
        primaryPackagePurpose: 'CONTAINER',
        externalRefs: [
          {
            referenceCategory: 'PACKAGE-MANAGER',
            referenceType: 'purl',
            referenceLocator: `pkg:oci/${imageName.split('/').pop()}@${encodeURIComponent(imageDigest)}?repository_url=${imageName}`,
          },
        ],
      },
      ...packages.map((p, i) => ({
        SPDXID: id(i),
        name: p.name,
        versionInfo: p.version,
        downloadLocation: p.downloadLocation,
        ...(p.checksum ? { checksums: [{ algorithm: p.checksum.algorithm, checksumValue: p.checksum.value }] } : {}),
        externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: p.purl }],
      })),
    ],
    relationships: [
      { spdxElementId: 'SPDXRef-DOCUMENT', relationshipType: 'DESCRIBES', relatedSpdxElement: 'SPDXRef-Image' },
      ...packages.map((_, i) => ({
        spdxElementId: 'SPDXRef-Image',
        relationshipType: 'CONTAINS',
        relatedSpdxElement: id(i),
      })),
    ],
  };
}
