/**
 * A retention answer as the grid shows it: per cohort row its size and, per period, the share of the cohort that
 * came back, with the periods still to come left empty and the one in progress marked; and the mean line over the
 * rows, as PostHog's "simple" mean (cells of an empty return or of the period in progress left out). No DOM.
 */
import type { RetentionRow } from '../api/types';

export interface RetentionCell {
  count: number;
  /** % of the cohort. */
  percent: number;
  /** The period runs now: its count may still grow. */
  inProgress: boolean;
}

export interface GridRow {
  label: string;
  date: string;
  size: number;
  /** One per period from 0; null where the period has not begun. */
  cells: (RetentionCell | null)[];
}

/**
 * The grid of `rows`. Row r's period k is the (r + k)-th period of the range; with the range ending now
 * (`endsNow`), the last of them is in progress and later ones have not begun.
 */
export function retentionGrid(rows: readonly RetentionRow[], endsNow: boolean): GridRow[] {
  const last = rows.length - 1;
  return rows.map((row, r) => {
    const size = row.values[0]?.count ?? 0;
    return {
      label: row.label,
      date: row.date,
      size,
      cells: row.values.map((value, k) =>
        r + k > last ? null : { count: value.count, percent: size > 0 ? (value.count / size) * 100 : 0, inProgress: endsNow && r + k === last },
      ),
    };
  });
}

/** Per period, the mean of the rows' percentages, leaving out empty cells, empty returns and periods in progress; 0 with none. */
export function meanLine(grid: readonly GridRow[]): number[] {
  const periods = Math.max(0, ...grid.map((row) => row.cells.length));
  return Array.from({ length: periods }, (_, k) => {
    const values = grid.flatMap((row) => {
      const cell = row.cells[k];
      return cell && cell.count > 0 && !cell.inProgress ? [cell.percent] : [];
    });
    return values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
  });
}
