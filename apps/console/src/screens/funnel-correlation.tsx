/**
 * Funnel correlation: for an ordered funnel of two or more steps, the events (or person properties, or event
 * properties) that go with converting and those that go with dropping off, by odds ratio. Computed when the
 * form is sent, not on every keystroke: a correlation scans every event of the range.
 */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { CorrelationEntry, CorrelationRequest, CorrelationType, FunnelWindowUnit } from '../api/types';
import { Async } from '../components/async';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Panel } from '../components/panel';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { figure } from '../format';
import { useLoad } from '../hooks';
import {
  CORRELATION_TYPES,
  WINDOW_UNITS,
  correlationName,
  correlationProblem,
  correlationRequest,
  correlationSides,
  defaultCorrelationForm,
  type CorrelationForm,
} from '../insights/correlation';
import { DATE_RANGES } from '../insights/query';

export function FunnelCorrelation() {
  const { client, projectId } = useConsole();
  const [form, setForm] = useState<CorrelationForm>(defaultCorrelationForm);
  const [sent, setSent] = useState<CorrelationRequest | null>(null);
  const problem = correlationProblem(form);
  const result = useLoad(
    (signal) => (sent ? client.call(operations.funnelCorrelation, { project_id: projectId }, { body: sent, signal }) : Promise.resolve(null)),
    [client, projectId, sent],
  );
  const set = <K extends keyof CorrelationForm>(key: K, value: CorrelationForm[K]) => setForm({ ...form, [key]: value });

  return (
    <>
      <PageHeader title="Funnel correlation" subtitle="What goes with converting through a funnel, and with dropping off" />
      <div class="editor">
        <form
          class="builder"
          aria-label="Funnel"
          onSubmit={(event) => {
            event.preventDefault();
            if (!problem) setSent(correlationRequest(form));
          }}
        >
          <fieldset>
            <legend>Steps</legend>
            {form.steps.map((step, index) => (
              <div class="series-row" role="group" aria-label={`Step ${index + 1}`} key={index}>
                <span class="series-letter" aria-hidden="true">
                  {index + 1}
                </span>
                <label class="grow">
                  <span>Event</span>
                  <input
                    value={step}
                    required
                    onInput={(event) =>
                      set(
                        'steps',
                        form.steps.map((value, position) => (position === index ? event.currentTarget.value : value)),
                      )
                    }
                  />
                </label>
                {form.steps.length > 2 && (
                  <button
                    type="button"
                    class="icon"
                    aria-label={`Remove step ${index + 1}`}
                    onClick={() =>
                      set(
                        'steps',
                        form.steps.filter((_, position) => position !== index),
                      )
                    }
                  >
                    ×
                  </button>
                )}
              </div>
            ))}
            <button type="button" class="secondary" onClick={() => set('steps', [...form.steps, ''])}>
              Add step
            </button>
          </fieldset>
          <fieldset>
            <legend>Window and range</legend>
            <div class="row">
              <label>
                <span>Convert within</span>
                <input type="number" min={1} value={form.windowInterval} onInput={(event) => set('windowInterval', Number(event.currentTarget.value))} />
              </label>
              <label>
                <span>Unit</span>
                <select value={form.windowUnit} onChange={(event) => set('windowUnit', event.currentTarget.value as FunnelWindowUnit)}>
                  {WINDOW_UNITS.map((unit) => (
                    <option key={unit} value={unit}>
                      {unit}s
                    </option>
                  ))}
                </select>
              </label>
              <label>
                <span>Date range</span>
                <select value={form.dateFrom} onChange={(event) => set('dateFrom', event.currentTarget.value)}>
                  {DATE_RANGES.map((range) => (
                    <option key={range.value} value={range.value}>
                      {range.label}
                    </option>
                  ))}
                </select>
              </label>
            </div>
          </fieldset>
          <fieldset>
            <legend>Correlate</legend>
            <div class="row">
              <label>
                <span>What</span>
                <select value={form.type} onChange={(event) => set('type', event.currentTarget.value as CorrelationType)}>
                  {CORRELATION_TYPES.map((type) => (
                    <option key={type.value} value={type.value}>
                      {type.label}
                    </option>
                  ))}
                </select>
              </label>
              {form.type !== 'events' && (
                <label class="grow">
                  <span>{form.type === 'properties' ? 'Person properties' : 'Events'}</span>
                  <input
                    value={form.names}
                    placeholder={form.type === 'properties' ? '$all, or plan, $browser' : 'purchase, signup'}
                    onInput={(event) => set('names', event.currentTarget.value)}
                  />
                </label>
              )}
            </div>
          </fieldset>
          {problem && <p class="muted">{problem}</p>}
          <button type="submit" disabled={problem !== null}>
            Correlate
          </button>
        </form>
        <section class="panel result" aria-labelledby="correlation-title" aria-busy={result.pending}>
          <h2 id="correlation-title">Result</h2>
          <Async value={result} onRetry={result.reload} label="Correlating…">
            {(data) =>
              data ? <CorrelationResult events={data.result.events} skewed={data.result.skewed} /> : <p class="muted">Describe a funnel and press Correlate.</p>
            }
          </Async>
        </section>
      </div>
    </>
  );
}

function CorrelationResult({ events, skewed }: { events: CorrelationEntry[]; skewed: boolean }) {
  const { success, failure } = correlationSides(events);
  if (events.length === 0) {
    return (
      <EmptyState title="Nothing stands out">
        {skewed ? 'Every person converted, or none did: there is nothing to compare.' : 'Too few persons share any one event or property to tell.'}
      </EmptyState>
    );
  }
  return (
    <>
      {skewed && <p class="muted">Far more persons converted than dropped off, or the reverse: the ratios rest on few persons.</p>}
      <Panel id="success" title="Goes with converting">
        <CorrelationTable caption="Correlated with converting" rows={success} />
      </Panel>
      <Panel id="failure" title="Goes with dropping off">
        <CorrelationTable caption="Correlated with dropping off" rows={failure} />
      </Panel>
    </>
  );
}

function CorrelationTable({ caption, rows }: { caption: string; rows: CorrelationEntry[] }) {
  return (
    <DataTable
      caption={caption}
      rows={rows}
      rowKey={(entry) => entry.event.event}
      empty="None."
      columns={[
        { label: 'Event or property', cell: (entry) => <span class="cell-name">{correlationName(entry.event.event)}</span> },
        { label: 'Converted', numeric: true, cell: (entry) => entry.success_count.toLocaleString() },
        { label: 'Dropped off', numeric: true, cell: (entry) => entry.failure_count.toLocaleString() },
        { label: 'Odds ratio', numeric: true, cell: (entry) => figure(entry.odds_ratio) },
      ]}
    />
  );
}
