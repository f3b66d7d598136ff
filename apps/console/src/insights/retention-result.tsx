/**
 * A retention answer as a grid: a row per cohort with its size, then per period the share of the cohort that came
 * back, the cell's colour as strong as the share; the mean line on top; the period in progress marked with `*`.
 * Given the node it answers, a cohort's size opens its persons.
 */
import { useMemo, useState } from 'preact/hooks';
import type { QueryNode, RetentionRow } from '../api/types';
import { EmptyState } from '../components/empty-state';
import { figure } from '../format';
import { meanLine, retentionGrid, type RetentionCell } from './retention-data';
import type { RetentionPeriod } from './retention-form';
import { PersonsDialog, type PersonsPoint } from './persons-dialog';

const pct = (value: number) => `${(Math.round(value * 10) / 10).toFixed(1)}%`;

function cohortLabel(date: string, period: RetentionPeriod): string {
  const value = new Date(date);
  if (Number.isNaN(value.getTime())) return date;
  // The row's date carries the project's offset: show it as written there, not in the browser's zone.
  const local = date.slice(0, 16).replace('T', ' ');
  if (period === 'Hour') return local;
  if (period === 'Month') return local.slice(0, 7);
  return local.slice(0, 10);
}

function Cell({ cell, mean = false }: { cell: RetentionCell | null; mean?: boolean }) {
  if (!cell) return <td class="retention-cell empty" />;
  const strength = Math.round(Math.min(100, Math.max(0, cell.percent)));
  return (
    <td
      class={`retention-cell${strength >= 50 ? ' strong' : ''}${mean ? ' mean' : ''}${cell.inProgress ? ' in-progress' : ''}`}
      style={{ '--strength': `${strength}%` }}
      title={mean ? `Mean: ${pct(cell.percent)}` : `${figure(cell.count)} persons${cell.inProgress ? ' (period in progress)' : ''}`}
    >
      {pct(cell.percent)}
      {cell.inProgress && '*'}
    </td>
  );
}

export function RetentionResult({ rows, period, endsNow, node }: { rows: RetentionRow[]; period: RetentionPeriod; endsNow: boolean; node?: QueryNode }) {
  const grid = useMemo(() => retentionGrid(rows, endsNow), [rows, endsNow]);
  const [point, setPoint] = useState<PersonsPoint | null>(null);
  const mean = useMemo(() => meanLine(grid), [grid]);
  if (grid.length === 0) return <EmptyState title="Nothing to show">No cohort in this range.</EmptyState>;
  const periods = mean.length;
  return (
    <>
      <div class="table-scroll" role="region" aria-label="Retention by cohort" tabIndex={0}>
        <table class="retention-grid">
          <caption class="visually-hidden">Retention by cohort: the cohort's size and the share of it that came back in each period</caption>
          <thead>
            <tr>
              <th scope="col">Cohort</th>
              <th scope="col" class="numeric">
                Persons
              </th>
              {Array.from({ length: periods }, (_, k) => (
                <th scope="col" class="numeric" key={k}>
                  {period} {k}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            <tr class="mean-row">
              <th scope="row">Mean</th>
              <td />
              {mean.map((value, k) => (
                <Cell key={k} cell={{ count: 0, percent: value, inProgress: false }} mean />
              ))}
            </tr>
            {grid.map((row, r) => (
              <tr key={row.date}>
                <th scope="row" class="cell-name">
                  {cohortLabel(row.date, period)}
                </th>
                <td class="numeric">
                  {node ? (
                    <button
                      type="button"
                      class="link-button"
                      disabled={row.size === 0}
                      aria-label={`Persons of the ${cohortLabel(row.date, period)} cohort: ${figure(row.size)}`}
                      onClick={() =>
                        setPoint({ title: `Cohort of ${cohortLabel(row.date, period)}`, source: { kind: 'InsightActorsQuery', source: node, interval: r } })
                      }
                    >
                      {figure(row.size)}
                    </button>
                  ) : (
                    figure(row.size)
                  )}
                </td>
                {row.cells.map((cell, k) => (
                  <Cell key={k} cell={cell} />
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {endsNow && <p class="muted">* The period in progress: its share may still grow.</p>}
      <PersonsDialog point={point} onClose={() => setPoint(null)} />
    </>
  );
}
