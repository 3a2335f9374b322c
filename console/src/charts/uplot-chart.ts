/**
 * uPlot (a fast, small canvas chart library) behind one function, in a module of its own so the
 * pages load it lazily: only the chart pages pay for it, not the first page.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  values: number[];
  color: string;
}

export function drawChart(
  target: HTMLElement,
  p: { xs: number[]; series: ChartSeries[]; width: number; height: number; bars?: boolean },
): { resize(width: number): void; destroy(): void } {
  const plot = new uPlot(
    {
      width: p.width,
      height: p.height,
      scales: { x: { time: true } },
      axes: [{}, { size: 56 }],
      legend: { show: true },
      series: [
        {},
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
    resize: (width) => plot.setSize({ width, height: p.height }),
    destroy: () => plot.destroy(),
  };
}
