import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format';

/** One scrape of svc's /metrics, parsed by a Prometheus text-format parser. */
export class Scrape {
  constructor(readonly families: MetricFamily[]) {}

  static async of(url: string): Promise<Scrape> {
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
    const type = res.headers.get('content-type') ?? '';
    if (!type.startsWith('text/plain')) throw new Error(`GET ${url}: content type ${type}`);
    return new Scrape(parsePrometheusTextFormat(await res.text()));
  }

  family(name: string): MetricFamily | undefined {
    return this.families.find((f) => f.name === name);
  }

  /** The sum of a counter's or gauge's samples whose labels include `labels` (0 when there is none). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.samples(name, labels).reduce((n, s) => n + Number(s.value), 0);
  }

  /** The sum of a histogram's sample counts (or sums) whose labels include `labels`. */
  histogram(name: string, labels: Record<string, string> = {}): { count: number; sum: number } {
    const ss = this.samples(name, labels);
    return { count: ss.reduce((n, s) => n + Number(s.count), 0), sum: ss.reduce((n, s) => n + Number(s.sum), 0) };
  }

  /** The values one label takes across a metric's samples. */
  labelValues(name: string, label: string): string[] {
    return [...new Set((this.family(name)?.metrics ?? []).map((s) => s.labels?.[label]).filter((v): v is string => v !== undefined))].sort();
  }

  private samples(name: string, labels: Record<string, string>) {
    return (this.family(name)?.metrics ?? []).filter((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  }
}
