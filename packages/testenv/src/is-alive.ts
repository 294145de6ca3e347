// The test bed's PID check. The product's is isProcessAlive of @baton/audit (it also tells zombies apart); testenv
// depends on no product package, so it keeps this one.
/** True while a process with this pid exists (EPERM means it exists but belongs to someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
