/**
 * A funnel answer as its view asks: steps as bars (one per breakdown value in each step) with the conversion
 * and drop-off under each step and a table of every figure; the time-to-convert histogram; or the conversion
 * trend line. Given the node it answers, a bar, a drop-off, a bin or a period opens the persons behind it.
 */
import { useCallback, useMemo, useState } from 'preact/hooks';
import type { FunnelStep, FunnelTimeToConvert, FunnelTrend, Interval, QueryNode } from '../api/types';
import { Chart } from '../components/chart';
import { EmptyState } from '../components/empty-state';
import { DataTable } from '../components/table';
import { duration, figure } from '../format';
import { funnelSeries, funnelTrendModel, timeToConvertModel, type FunnelSeries } from './funnel-data';
import type { FunnelVizType } from './funnel-form';
import { PersonsDialog, type PersonsPoint } from './persons-dialog';

const SERIES_COLOURS = 8;
const pct = (value: number) => `${figure(Math.round(value * 10) / 10)}%`;
const time = (seconds: number | null) => (seconds === null ? '—' : duration(seconds));

export function FunnelResult({ result, vizType, interval, node }: { result: unknown; vizType: FunnelVizType; interval: Interval; node?: QueryNode }) {
  const [point, setPoint] = useState<PersonsPoint | null>(null);
  const open = useCallback(
    (title: string, fields: Record<string, unknown>) => node && setPoint({ title, source: { kind: 'FunnelsActorsQuery', source: node, ...fields } }),
    [node],
  );
  const view =
    vizType === 'time_to_convert' ? (
      <TimeToConvert answer={result as FunnelTimeToConvert} open={node && open} />
    ) : vizType === 'trends' ? (
      <ConversionTrend trends={result as FunnelTrend[]} interval={interval} open={node && open} />
    ) : (
      <Steps result={result as FunnelStep[] | FunnelStep[][]} open={node && open} />
    );
  return (
    <>
      {view}
      <PersonsDialog point={point} onClose={() => setPoint(null)} />
    </>
  );
}

/** Opens the persons of a point: a title and the FunnelsActorsQuery fields that name it. */
type Open = ((title: string, fields: Record<string, unknown>) => void) | undefined;

function Steps({ result, open }: { result: FunnelStep[] | FunnelStep[][]; open: Open }) {
  const series = useMemo(() => funnelSeries(result), [result]);
  if (series.length === 0 || series[0]!.steps.length === 0) return <EmptyState title="Nothing to show">No step matched.</EmptyState>;
  const steps = series[0]!.steps;
  const breakdown = series.length > 1 || series[0]!.breakdownValue !== undefined;
  return (
    <>
      <div class="funnel-bars" role="list" aria-label="Funnel steps">
        {steps.map((step, index) => (
          <div class="funnel-step" role="listitem" key={step.order} aria-label={`Step ${index + 1}, ${step.name}`}>
            <div class="funnel-columns">
              {series.map((line, position) => {
                const row = line.steps[index]!;
                const label = `${line.label}: ${figure(row.count)} (${pct(row.fromFirst)})`;
                const bar = <div class="funnel-bar" style={{ height: `${row.fromFirst}%` }} />;
                const style = { '--bar-colour': `var(--series-${position % SERIES_COLOURS})` };
                return open ? (
                  <button
                    type="button"
                    class="funnel-track"
                    key={position}
                    title={label}
                    aria-label={`Persons who reached step ${index + 1}, ${label}`}
                    style={style}
                    onClick={() =>
                      open(`${step.name} · ${line.label}`, {
                        funnelStep: index + 1,
                        ...(line.breakdownValue !== undefined && { funnelStepBreakdown: line.breakdownValue }),
                      })
                    }
                  >
                    {bar}
                  </button>
                ) : (
                  <div class="funnel-track" key={position} title={label} style={style}>
                    {bar}
                  </div>
                );
              })}
            </div>
            <div class="funnel-step-label">
              <strong>
                {index + 1}. {step.name}
              </strong>
              {!breakdown && (
                <>
                  <span data-testid="step-count">
                    {figure(step.count)} · {pct(step.fromFirst)}
                  </span>
                  {index > 0 &&
                    (open ? (
                      <button
                        type="button"
                        class="link-button"
                        data-testid="step-drop-off"
                        onClick={() => open(`Dropped off before ${step.name}`, { funnelStep: -(index + 1) })}
                      >
                        {figure(step.droppedOff)} dropped off ({pct(100 - step.fromPrevious)})
                      </button>
                    ) : (
                      <span class="muted" data-testid="step-drop-off">
                        {figure(step.droppedOff)} dropped off ({pct(100 - step.fromPrevious)})
                      </span>
                    ))}
                </>
              )}
            </div>
          </div>
        ))}
      </div>
      {breakdown && <SeriesLegend series={series} />}
      {breakdown ? <BreakdownTable series={series} /> : <StepTable series={series[0]!} />}
    </>
  );
}

function SeriesLegend({ series }: { series: FunnelSeries[] }) {
  return (
    <ul class="legend">
      {series.map((line, index) => (
        <li key={index}>
          <span class="swatch" style={{ backgroundColor: `var(--series-${index % SERIES_COLOURS})` }} aria-hidden="true" />
          <span class="legend-label">{line.label}</span>
        </li>
      ))}
    </ul>
  );
}

function StepTable({ series }: { series: FunnelSeries }) {
  return (
    <DataTable
      caption="Funnel steps"
      rows={series.steps}
      rowKey={(step) => step.order}
      columns={[
        { label: 'Step', cell: (step) => <span class="cell-name">{step.name}</span> },
        { label: 'Persons', numeric: true, cell: (step) => figure(step.count) },
        { label: 'Of first step', numeric: true, cell: (step) => pct(step.fromFirst) },
        { label: 'Of previous', numeric: true, cell: (step) => pct(step.fromPrevious) },
        { label: 'Dropped off', numeric: true, cell: (step) => figure(step.droppedOff) },
        { label: 'Average time', numeric: true, cell: (step) => time(step.averageTime) },
        { label: 'Median time', numeric: true, cell: (step) => time(step.medianTime) },
      ]}
    />
  );
}

/** One row per breakdown value: the persons at each step, and the conversion from the first step to the last. */
function BreakdownTable({ series }: { series: FunnelSeries[] }) {
  const names = series[0]!.steps.map((step) => step.name);
  return (
    <DataTable
      caption="Funnel steps by breakdown"
      rows={series}
      rowKey={(_, index) => index}
      columns={[
        { label: 'Breakdown', cell: (line) => <span class="cell-name">{line.label}</span> },
        ...names.map((name, index) => ({ label: `${index + 1}. ${name}`, numeric: true, cell: (line: FunnelSeries) => figure(line.steps[index]?.count ?? 0) })),
        { label: 'Conversion', numeric: true, cell: (line) => pct(line.steps[line.steps.length - 1]?.fromFirst ?? 0) },
      ]}
    />
  );
}

function TimeToConvert({ answer, open }: { answer: FunnelTimeToConvert; open: Open }) {
  const model = useMemo(() => timeToConvertModel(answer), [answer]);
  const onPoint = useCallback(
    (_series: number, bin: number) => open?.(`Converted in ${model.labels[bin]}`, { funnelTimeToConvertBin: answer.bins[bin]![0] }),
    [open, model, answer],
  );
  if (model.labels.length === 0) return <EmptyState title="Nobody converted">No one reached the last step in the window.</EmptyState>;
  return (
    <>
      <p class="muted">Average time to convert: {time(answer.average_conversion_time)}</p>
      <Chart model={model} kind="bar" label="Time to convert" onPoint={open && onPoint} />
    </>
  );
}

function ConversionTrend({ trends, interval, open }: { trends: FunnelTrend[]; interval: Interval; open: Open }) {
  const model = useMemo(() => funnelTrendModel(trends, interval), [trends, interval]);
  const onPoint = useCallback(
    (series: number, period: number) => {
      const trend = trends[series];
      if (!trend) return;
      open?.(`Converted, entered ${trend.labels[period]}`, {
        funnelTrendsEntrancePeriodStart: trend.days[period],
        ...(trend.breakdown_value !== undefined && { funnelStepBreakdown: trend.breakdown_value }),
      });
    },
    [open, trends],
  );
  if (model.labels.length === 0) return <EmptyState title="Nothing to show">No one entered the funnel in this range.</EmptyState>;
  return <Chart model={model} kind="line" label="Conversion rate" onPoint={open && onPoint} />;
}
