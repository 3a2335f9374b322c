/**
 * A time chart that loads uPlot on first use. The figure's accessible name is its title; a
 * caption under it gives each series' total, so the numbers are there without the picture.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ChartSeries, DrawnChart } from './uplot-chart';

export type { ChartSeries } from './uplot-chart';

/** `2026-01-05 10:00:00 +0000 UTC` (the stats API's x text) → Unix seconds. */
export function statsTime(x: string): number {
  return Date.parse(x.replace(' +0000 UTC', 'Z').replace(' ', 'T')) / 1000;
}

export function Chart(props: {
  title: string;
  xs: number[];
  series: ChartSeries[];
  height?: number;
  bars?: boolean;
  format?: (n: number) => string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<DrawnChart>();
  const [failed, setFailed] = useState<string>();
  const { xs, series, bars } = props;
  const height = props.height ?? 180;
  // The newest data, for a chart drawn after the lazy import: it may have changed meanwhile.
  const data = useRef({ xs, series });
  data.current = { xs, series };
  // The chart is drawn again only when its series or size change. A page's refresh brings new
  // data for the same series: that goes into the drawn chart, so a reader pointing at a minute
  // keeps its figures instead of losing them to a new chart every few seconds.
  const shape = [bars, height, ...series.map((s) => `${s.label} ${s.color}`)].join('\n');
  useEffect(() => {
    const target = box.current;
    if (!target) return;
    let observer: ResizeObserver | undefined;
    let gone = false;
    import('./uplot-chart').then(
      ({ drawChart }) => {
        if (gone) return;
        const width = (): number => target.clientWidth || 300;
        const drawn = drawChart(target, { ...data.current, bars, height, width: width() });
        chart.current = drawn;
        observer = new ResizeObserver(() => drawn.resize(width()));
        observer.observe(target);
      },
      (error: unknown) => setFailed(String((error as Error)?.message ?? error)),
    );
    return () => {
      gone = true;
      observer?.disconnect();
      chart.current?.destroy();
      chart.current = undefined;
    };
    // `shape` stands for the series and the size: the data alone is not a reason to draw anew.
  }, [shape]);
  useEffect(() => chart.current?.update(xs, series), [xs, series]);
  const format = props.format ?? ((n: number) => n.toLocaleString());
  return (
    <figure class="chart" aria-label={props.title}>
      <figcaption>
        <strong>{props.title}</strong>
        <span class="muted">
          {' '}
          (
          {series
            .map((s) => `${s.label}: ${format(s.values.reduce((sum, v) => sum + v, 0))}`)
            .join(', ')}
          )
        </span>
      </figcaption>
      {failed ? <p class="state error">Could not draw the chart: {failed}</p> : null}
      <div class="chart-box" ref={box} />
    </figure>
  );
}
