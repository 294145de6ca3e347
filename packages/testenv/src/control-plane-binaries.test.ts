import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTROL_PLANE_VERSIONS, KUBERNETES_VERSIONS, resolveKubernetesVersion } from './control-plane-binaries.js';
import { goModulesDir } from './paths.js';

describe('resolveKubernetesVersion', () => {
  it('takes a served version with or without v, or a minor; defaults to the pinned one', () => {
    expect(resolveKubernetesVersion('1.35.4', {})).toBe('v1.35.4');
    expect(resolveKubernetesVersion('v1.37.2', {})).toBe('v1.37.2');
    expect(resolveKubernetesVersion('1.34', {})).toBe('v1.34.4');
    expect(resolveKubernetesVersion(undefined, {})).toBe(CONTROL_PLANE_VERSIONS.kubernetes);
  });

  it('reads BATON_KUBERNETES_VERSION when no version is asked for; the option wins over it', () => {
    expect(resolveKubernetesVersion(undefined, { BATON_KUBERNETES_VERSION: '1.35.4' })).toBe('v1.35.4');
    expect(resolveKubernetesVersion('1.37.2', { BATON_KUBERNETES_VERSION: '1.35.4' })).toBe('v1.37.2');
  });

  it('refuses a version it does not build, naming where it came from and the versions served', () => {
    expect(() => resolveKubernetesVersion('1.33.1', {})).toThrow(
      '--kubernetes-version 1.33.1 is not a Kubernetes version the test bed builds: use one of 1.34.4, 1.35.4, 1.36.3, 1.37.2 (default 1.36.3)',
    );
    expect(() => resolveKubernetesVersion(undefined, { BATON_KUBERNETES_VERSION: '1.35.1' })).toThrow(
      /^BATON_KUBERNETES_VERSION 1\.35\.1 is not/,
    );
  });

  it('has a wrapper module per served version, requiring exactly that k8s.io/kubernetes and its staging modules', () => {
    for (const v of KUBERNETES_VERSIONS) {
      const gomod = readFileSync(join(goModulesDir, 'kube', v, 'go.mod'), 'utf8');
      expect(gomod).toMatch(new RegExp(`^\\s*k8s\\.io/kubernetes ${v.replaceAll('.', '\\.')}( // indirect)?$`, 'm'));
      expect(gomod).toContain(`k8s.io/client-go => k8s.io/client-go v0.${v.slice(3)}`);
      expect(existsSync(join(goModulesDir, 'kube', v, 'go.sum'))).toBe(true);
    }
  });
});
