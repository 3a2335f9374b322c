/**
 * uPlot (a fast, small canvas chart library) behind one function, in a module of its own so the
 * pages load it lazily: only the chart pages pay for it, not the first page.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatTime, timeTicks } from '../format';

export interface ChartSeries {
  label: string;
  values: number[];
  color: string;
}

/** A drawn chart: new data replaces the old in place, keeping the pointer's reading. */
export interface DrawnChart {
  update(xs: number[], series: ChartSeries[]): void;
  resize(width: number): void;
  destroy(): void;
}

export function drawChart(
  target: HTMLElement,
  p: { xs: number[]; series: ChartSeries[]; width: number; height: number; bars?: boolean },
): DrawnChart {
  const plot = new uPlot(
    {
      width: p.width,
      height: p.height,
      scales: { x: { time: true } },
      // Times as the rest of the console writes them (2026-11-25 14:05), not uPlot's US forms.
      axes: [{ values: (_u, ticks, _axis, _space, step) => timeTicks(ticks, step) }, { size: 56 }],
      legend: { show: true },
      series: [
        { value: (_u, seconds) => (seconds === null ? '--' : formatTime(seconds * 1000)) },
        ...p.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          ...(p.bars ? { fill: `${s.color}33`, paths: uPlot.paths.bars?.({ size: [0.7] }) } : {}),
        })),
      ],
    },
    [p.xs, ...p.series.map((s) => s.values)],
    target,
  );
  return {
    update: (xs, series) => plot.setData([xs, ...series.map((s) => s.values)]),
    resize: (width) => plot.setSize({ width, height: p.height }),
    destroy: () => plot.destroy(),
  };
}
