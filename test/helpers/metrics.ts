import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format';

/** One sample line: `name{a="x",b="y"} value`. */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * One scrape of svc's /metrics, parsed by a Prometheus text-format parser
 * (parse-prometheus-text-format, which throws on malformed text). That parser
 * drops the labels of labelled histograms, so their `_count` and `_sum` series
 * are read from the sample lines.
 */
export class Scrape {
  constructor(
    readonly families: MetricFamily[],
    private readonly text: string,
  ) {}

  static async of(url: string): Promise<Scrape> {
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
    const type = res.headers.get('content-type') ?? '';
    if (!type.startsWith('text/plain')) throw new Error(`GET ${url}: content type ${type}`);
    const text = await res.text();
    return new Scrape(parsePrometheusTextFormat(text), text);
  }

  family(name: string): MetricFamily | undefined {
    return this.families.find((f) => f.name === name);
  }

  /** The sum of a counter's or gauge's samples whose labels include `labels` (0 when there is none). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.samples(name, labels).reduce((n, s) => n + Number(s.value), 0);
  }

  /** The sums of a histogram's `_count` and `_sum` series whose labels include `labels`. */
  histogram(name: string, labels: Record<string, string> = {}): { count: number; sum: number } {
    if (this.family(name)?.type !== 'HISTOGRAM') return { count: 0, sum: 0 };
    const out = { count: 0, sum: 0 };
    for (const line of this.text.split('\n')) {
      const m = SAMPLE.exec(line);
      if (!m || (m[1] !== `${name}_count` && m[1] !== `${name}_sum`)) continue;
      const have = Object.fromEntries([...(m[2] ?? '').matchAll(LABEL)].map((l) => [l[1]!, l[2]!]));
      if (!Object.entries(labels).every(([k, v]) => have[k] === v)) continue;
      if (m[1].endsWith('_count')) out.count += Number(m[3]);
      else out.sum += Number(m[3]);
    }
    return out;
  }

  /** The values one label takes across a metric's samples. */
  labelValues(name: string, label: string): string[] {
    return [...new Set((this.family(name)?.metrics ?? []).map((s) => s.labels?.[label]).filter((v): v is string => v !== undefined))].sort();
  }

  private samples(name: string, labels: Record<string, string>) {
    return (this.family(name)?.metrics ?? []).filter((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  }
}
