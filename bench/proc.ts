/**
 * What the benchmarks read of a process from /proc (Linux): CPU time and resident memory.
 */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** User + system CPU seconds of process `pid` so far, or of its thread `tid` when given. */
export function procCpuSeconds(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces and parentheses), from the third: utime and stime are the
  // 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Resident memory of process `pid` in MiB: now (VmRSS) or its peak so far (VmHWM). */
export function procMemoryMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}
