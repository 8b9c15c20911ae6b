/**
 * Samples the resident set size of a process (VmRSS in /proc/<pid>/status)
 * at a fixed interval, to show whether memory stays flat while svc works
 * through a backlog. Bounded: at most `maxSamples` samples are kept.
 */
import { readFileSync } from 'node:fs';

export interface RssSample {
  /** Epoch ms. */
  at: number;
  kb: number;
}

/** VmRSS (or, with `field`, another Vm* line) of `pid` in kB; null when /proc is unavailable or the process is gone. */
export function readVm(pid: number | undefined, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number | null {
  if (pid === undefined) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

export class RssSampler {
  readonly samples: RssSample[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly pid: number | undefined,
    private readonly intervalMs = 100,
    private readonly maxSamples = 200_000,
  ) {}

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  stop(): this {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
    return this;
  }

  private sample(): void {
    if (this.samples.length >= this.maxSamples) return;
    const kb = readVm(this.pid);
    if (kb !== null) this.samples.push({ at: Date.now(), kb });
  }

  get peakKb(): number | null {
    if (this.samples.length === 0) return null;
    let peak = 0;
    for (const s of this.samples) if (s.kb > peak) peak = s.kb;
    return peak;
  }

  /** The sample nearest to `fraction` (0 = first, 1 = last) of the sampled span. */
  at(fraction: number): RssSample | null {
    if (this.samples.length === 0) return null;
    const first = this.samples[0]!.at;
    const last = this.samples[this.samples.length - 1]!.at;
    const target = first + (last - first) * fraction;
    let best = this.samples[0]!;
    for (const s of this.samples) if (Math.abs(s.at - target) < Math.abs(best.at - target)) best = s;
    return best;
  }
}
