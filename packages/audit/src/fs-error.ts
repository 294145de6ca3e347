/** A short, secret-free reason for a failed file operation. */
export function describeFsError(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    default:
      return err instanceof Error ? err.message : String(err);
  }
}
