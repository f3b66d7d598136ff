/**
 * A HogQL answer (rows of values, column names, ClickHouse types) as the SQL editor shows it: cell text, CSV,
 * which columns hold numbers, and a chart of chosen columns over another. No DOM here, for unit tests.
 */
import type { ChartModel } from '../insights/chart-data';

export interface QueryTable {
  columns: string[];
  /** `[name, ClickHouse type]` per column. */
  types: [string, string][];
  results: unknown[][];
}

/** A cell as text: NULL as empty, text as it is, anything else as JSON. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** RFC 4180 CSV: a header row of the column names, then the rows; fields with a comma, quote or line break quoted. */
export function toCsv(table: QueryTable): string {
  const field = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);
  const lines = [table.columns, ...table.results.map((row) => row.map(cellText))].map((cells) => cells.map(field).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

const NUMERIC_TYPE = /^(?:Nullable\()?(?:U?Int\d+|Float\d+|Decimal)/;

/** The indexes of the columns whose ClickHouse type is a number (nullable ones too). */
export function numericColumns(table: QueryTable): number[] {
  return table.columns.flatMap((_, index) => (NUMERIC_TYPE.test(table.types[index]?.[1] ?? '') ? [index] : []));
}

/** What the chart draws: the column along the x axis and the numeric columns drawn over it. */
export interface ChartColumns {
  x: number;
  y: number[];
}

/** The default chart: the first column along x, every other numeric column over it. */
export function defaultChartColumns(table: QueryTable): ChartColumns {
  return { x: 0, y: numericColumns(table).filter((index) => index !== 0) };
}

/** Columns named rather than numbered (as a saved insight keeps them), back to indexes; unknown names are dropped. */
export function columnsByName(table: QueryTable, names: { x?: string; y?: string[] }): ChartColumns {
  const fallback = defaultChartColumns(table);
  const x = names.x === undefined ? -1 : table.columns.indexOf(names.x);
  const y = (names.y ?? []).map((name) => table.columns.indexOf(name)).filter((index) => index >= 0);
  return { x: x >= 0 ? x : fallback.x, y: names.y === undefined ? fallback.y : y };
}

/** The chart of `columns.y` over `columns.x`: one label per row, one series per y column (non-numbers as 0). */
export function tableChart(table: QueryTable, columns: ChartColumns): ChartModel {
  return {
    labels: table.results.map((row) => cellText(row[columns.x])),
    series: columns.y.map((column) => {
      const values = table.results.map((row) => {
        const value = Number(row[column]);
        return Number.isFinite(value) ? value : 0;
      });
      return { label: table.columns[column] ?? `column ${column + 1}`, values, total: null, previous: false };
    }),
  };
}
