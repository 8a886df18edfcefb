// A process's CPU split by thread, from /proc/<pid>/task/*/stat: its main thread (HTTP, our JS, the writer) apart
// from its other threads (libuv's pool: LevelDB's synced batch writes; LevelDB's compaction thread).
import { readdirSync, readFileSync } from 'node:fs';

/** CPU ms so far of a process's main thread and of all its other threads (clock ticks of 10 ms). */
export const threadCpu = (pid: number) => {
  let main = 0;
  let other = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // a thread that ended meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (Number(fields[11]) + Number(fields[12])) * 10;
    if (tid === String(pid)) main += ms;
    else other += ms;
  }
  return { main, other };
};
