// A full GC forced in a spawned server, so that a memory figure counts what the process holds rather than garbage
// V8 has not collected yet (how much there is depends on when the collector last ran, not on the data).
import { ROOT } from '../../testkit/spawn.ts';
import type { SpawnedServer } from './wo.ts';

/** Node args for a server whose memory is read after a forced GC (testkit/gc-on-signal.cjs: SIGUSR2, then GC_DONE). */
export const GC_ARGS = ['--expose-gc', '--require', `${ROOT}/testkit/gc-on-signal.cjs`];

/** Forces a full GC in a server started with GC_ARGS; false when it did not report one within 10 s. */
export async function forceGc(srv: SpawnedServer): Promise<boolean> {
  const stderr = srv.child.stderr;
  if (!stderr) return false;
  const done = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => finish(false), 10_000);
    const onData = (chunk: Buffer) => void (chunk.includes('GC_DONE') && finish(true));
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      stderr.off('data', onData);
      resolve(ok);
    };
    stderr.on('data', onData);
  });
  srv.child.kill('SIGUSR2');
  return done;
}
