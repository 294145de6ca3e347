import { describe, expect, it } from 'vitest';
import { isSupportedKubernetes, kubernetesSupport, olderClusterReason } from './preflight.js';

describe('kubernetesSupport', () => {
  it('takes the tested minors 1.34 to 1.37, as plain and as managed services stamp them', () => {
    expect(kubernetesSupport({ major: '1', minor: '34', gitVersion: 'v1.34.4' })).toBe('tested');
    expect(kubernetesSupport({ major: '1', minor: '35+', gitVersion: 'v1.35.2-eks-f69f56f' })).toBe('tested');
    expect(kubernetesSupport({ major: '1', minor: '37', gitVersion: 'v1.37.2' })).toBe('tested');
  });

  it('calls a server older than 1.34 older, whatever its stamp', () => {
    expect(kubernetesSupport({ major: '1', minor: '33', gitVersion: 'v1.33.9' })).toBe('older');
    expect(kubernetesSupport({ major: '1', minor: '30+', gitVersion: 'v1.30.14-gke.100' })).toBe('older');
    expect(kubernetesSupport({ major: '', minor: '', gitVersion: '' })).toBe('older');
  });

  it('calls a newer minor (or major) newer, to warn rather than refuse', () => {
    expect(kubernetesSupport({ major: '1', minor: '38', gitVersion: 'v1.38.0' })).toBe('newer');
    expect(kubernetesSupport({ major: '2', minor: '0', gitVersion: 'v2.0.0' })).toBe('newer');
  });

  it('reads the minor from the git version when /version leaves it empty', () => {
    expect(kubernetesSupport({ major: '1', minor: '', gitVersion: 'v1.36.3+k3s1' })).toBe('tested');
    expect(kubernetesSupport({ major: '1', minor: '', gitVersion: 'v1.29.1' })).toBe('older');
  });

  it('isSupportedKubernetes is true from the oldest tested minor on', () => {
    expect(isSupportedKubernetes('1', '34')).toBe(true);
    expect(isSupportedKubernetes('1', '38')).toBe(true);
    expect(isSupportedKubernetes('1', '33')).toBe(false);
  });

  it('refuses an older server for the tested range, not for a missing API (ValidatingAdmissionPolicy v1 is GA since 1.30)', () => {
    const reason = olderClusterReason({ major: '1', minor: '31', gitVersion: 'v1.31.4' });
    expect(reason).toContain('Kubernetes v1.31.4, older than every version baton is tested on (1.34');
    expect(reason).toContain('baton needs 1.34 or newer');
    expect(reason).not.toContain('ValidatingAdmissionPolicy v1');
    expect(reason).toMatch(/upgrade the cluster to 1\.34 or newer$/);
  });
});
