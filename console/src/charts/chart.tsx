/**
 * A time chart that loads uPlot on first use. The figure's accessible name is its title; a
 * caption under it gives each series' total, so the numbers are there without the picture.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ChartSeries } from './uplot-chart';

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
  const [failed, setFailed] = useState<string>();
  const { xs, series, bars } = props;
  const height = props.height ?? 180;
  useEffect(() => {
    const target = box.current;
    if (!target) return;
    let chart: { resize(width: number): void; destroy(): void } | undefined;
    let observer: ResizeObserver | undefined;
    let gone = false;
    import('./uplot-chart').then(
      ({ drawChart }) => {
        if (gone) return;
        chart = drawChart(target, { xs, series, bars, height, width: target.clientWidth || 300 });
        observer = new ResizeObserver(() => chart?.resize(target.clientWidth || 300));
        observer.observe(target);
      },
      (error: unknown) => setFailed(String((error as Error)?.message ?? error)),
    );
    return () => {
      gone = true;
      observer?.disconnect();
      chart?.destroy();
    };
  }, [xs, series, bars, height]);
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
