/**
 * A line, bar or stacked bar chart of a {@link ChartModel} drawn by uPlot on a canvas, with an HTML legend
 * (labels, colours, totals) under it. Stacked bars put positive values above 0 and negative ones below it. Colours come from the stylesheet's `--series-N` variables, so the chart follows the light
 * or dark scheme; it is redrawn when the scheme or its width changes. Screen readers get a summary as the
 * figure's label; the table display has every number.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { figure } from '../format';
import { barSlot, compactNumber, stackedValues, type ChartModel, type ChartSeries } from '../insights/chart-data';

export type ChartKind = 'line' | 'bar' | 'stacked';

const SERIES_COLOURS = 8;
/** Y-axis steps: whole numbers (1, 2, 5, 10, 20, 50…), as most series count something. */
const COUNT_STEPS = Array.from({ length: 13 }, (_, power) => [1, 2, 5].map((step) => step * 10 ** power)).flat();
const scheme = window.matchMedia('(prefers-color-scheme: dark)');

function useColourScheme(): boolean {
  const [dark, setDark] = useState(scheme.matches);
  useEffect(() => {
    const listener = () => setDark(scheme.matches);
    scheme.addEventListener('change', listener);
    return () => scheme.removeEventListener('change', listener);
  }, []);
  return dark;
}

/** `--series-N` of the stylesheet, for series `index`. */
function seriesColour(element: Element, index: number): string {
  return getComputedStyle(element)
    .getPropertyValue(`--series-${index % SERIES_COLOURS}`)
    .trim();
}

interface Drawn {
  series: ChartSeries;
  /** Its index in the model. */
  index: number;
  /** Its palette entry. */
  colour: number;
  values: number[];
}

/** The series in the order uPlot paints them: stacked bars outermost first, so each inner one is painted over the one around it. */
function drawnSeries(model: ChartModel, kind: ChartKind): Drawn[] {
  const all = model.series.map((series, index) => ({ series, index, colour: series.colour ?? index, values: series.values }));
  if (kind !== 'stacked') return all;
  const edges = stackedValues(model.series.map((series) => series.values));
  return all.map((each, index) => ({ ...each, values: edges[index]! })).reverse();
}

function options(model: ChartModel, drawn: Drawn[], kind: ChartKind, element: HTMLElement, width: number, height: number): uPlot.Options {
  const style = getComputedStyle(element);
  const muted = style.getPropertyValue('--fg-muted').trim();
  const grid = style.getPropertyValue('--border').trim();
  const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: '12px system-ui, sans-serif' };
  const count = drawn.length;
  return {
    width,
    height,
    legend: { show: false },
    cursor: { drag: { x: false, y: false }, points: { size: 7 } },
    scales: {
      x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] },
      y: { range: (_u, min, max) => [Math.min(0, min * 1.1), max > 0 ? max * 1.1 : min < 0 ? 0 : 1] },
    },
    axes: [
      {
        ...axis,
        space: 64,
        incrs: [1, 2, 3, 4, 5, 7, 10, 14, 15, 20, 30, 50, 100, 200, 500, 1000],
        values: (_u, splits) => splits.map((split) => model.labels[split] ?? ''),
      },
      { ...axis, size: 52, incrs: COUNT_STEPS, values: (_u, splits) => splits.map(compactNumber) },
    ],
    series: [
      {},
      ...drawn.map(({ series, colour: entry }, index): uPlot.Series => {
        const colour = seriesColour(element, entry);
        const slot = kind === 'stacked' ? barSlot(0, 1) : barSlot(index, count);
        return kind !== 'line'
          ? {
              label: series.label,
              stroke: colour,
              fill: colour,
              width: 0,
              paths: uPlot.paths.bars!({
                disp: {
                  x0: { unit: 1, values: (u) => Array.from(u.data[0], (x) => x + slot.offset) },
                  size: { unit: 1, values: () => [slot.width] },
                },
              }),
              points: { show: false },
            }
          : {
              label: series.label,
              stroke: colour,
              width: 2,
              dash: series.previous ? [6, 4] : undefined,
              points: { show: model.labels.length <= 31, size: 5, fill: colour },
            };
      }),
    ],
  };
}

/** The drawn series nearest the cursor at its bucket (the model's index), or null when the cursor is off the data. */
function pointAt(plot: uPlot, drawn: Drawn[]): { series: number; index: number } | null {
  const index = plot.cursor.idx;
  if (index === null || index === undefined) return null;
  const value = plot.posToVal(plot.cursor.top ?? 0, 'y');
  let nearest: Drawn | undefined;
  for (const each of drawn) {
    const at = each.values[index];
    if (at !== undefined && (nearest === undefined || Math.abs(at - value) < Math.abs(nearest.values[index]! - value))) nearest = each;
  }
  return nearest ? { series: nearest.index, index } : null;
}

export function Chart({
  model,
  kind,
  label,
  height = 260,
  onPoint,
}: {
  model: ChartModel;
  kind: ChartKind;
  label: string;
  height?: number;
  /** Called with the clicked point: the series' index in the model and the bucket's. */
  onPoint?: (series: number, index: number) => void;
}) {
  const container = useRef<HTMLDivElement>(null);
  const dark = useColourScheme();
  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const drawn = drawnSeries(model, kind);
    const data: uPlot.AlignedData = [model.labels.map((_, index) => index), ...drawn.map((series) => series.values)];
    const plot = new uPlot(options(model, drawn, kind, element, element.clientWidth, height), data, element);
    const resize = new ResizeObserver(() => plot.setSize({ width: element.clientWidth, height }));
    resize.observe(element);
    const click = () => {
      const point = pointAt(plot, drawn);
      if (point && onPoint) onPoint(point.series, point.index);
    };
    if (onPoint) {
      plot.over.style.cursor = 'pointer';
      plot.over.addEventListener('click', click);
    }
    return () => {
      plot.over.removeEventListener('click', click);
      resize.disconnect();
      plot.destroy();
    };
  }, [model, kind, height, dark, onPoint]);
  const summary = model.series.map((series) => (series.total === null ? series.label : `${series.label}: ${figure(series.total)}`)).join('; ');
  return (
    <figure class="chart">
      <div ref={container} class="chart-canvas" role="img" aria-label={`${label}. ${summary}`} />
      <Legend model={model} />
    </figure>
  );
}

function Legend({ model }: { model: ChartModel }) {
  const ref = useRef<HTMLUListElement>(null);
  const [colours, setColours] = useState<string[]>([]);
  const dark = useColourScheme();
  useEffect(() => {
    if (ref.current) setColours(model.series.map((series, index) => seriesColour(ref.current!, series.colour ?? index)));
  }, [model, dark]);
  return (
    <ul class="legend" ref={ref}>
      {model.series.map((series, index) => (
        <li key={index}>
          <span
            class={series.previous ? 'swatch previous' : 'swatch'}
            style={{ borderColor: colours[index], backgroundColor: series.previous ? 'transparent' : colours[index] }}
            aria-hidden="true"
          />
          <span class="legend-label">{series.label}</span>
          {series.total !== null && <span class="legend-total">{figure(series.total)}</span>}
        </li>
      ))}
    </ul>
  );
}
