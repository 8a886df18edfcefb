// What every scenario module gets from bench/run.ts: the mode, where data dirs go, and how to report.
export type Mode = 'full' | 'quick' | 'smoke';

export interface BenchContext {
  mode: Mode;
  /** Data dirs and probes go under here (on the disk whose fsync rate is measured). */
  dataRoot: string;
  /** Progress line on stderr, with the elapsed time. */
  phase(what: string): void;
  /** A caveat that goes into the report. */
  warn(what: string): void;
  /** A directory to delete when the run ends, whatever happens. */
  track(dir: string): void;
}
