import { stringify } from 'yaml';

/** Builds a kubeconfig with one cluster, one client-certificate user and one context, all named `name`. */
export function kubeconfigYaml(opts: {
  readonly name: string;
  readonly server: string;
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: opts.name, cluster: { server: opts.server, 'certificate-authority-data': b64(opts.caPem) } }],
      users: [
        {
          name: opts.name,
          user: { 'client-certificate-data': b64(opts.certPem), 'client-key-data': b64(opts.keyPem) },
        },
      ],
      contexts: [{ name: opts.name, context: { cluster: opts.name, user: opts.name } }],
      'current-context': opts.name,
    },
    { version: '1.1' },
  );
}
