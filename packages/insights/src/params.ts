import type { ClickHouseParams } from '@plover/clickhouse';

/**
 * Bound parameters for one query under construction. Every user-supplied value, property keys included, enters
 * SQL only as a `{pN:Type}` placeholder made here; the SQL text itself is built from constants.
 */
export class Params {
  readonly values: ClickHouseParams = {};
  private readonly placeholders = new Map<string, string>();

  /**
   * A placeholder bound to `value` with ClickHouse type `type` (e.g. `String`, `Array(String)`, `Float64`).
   * Equal values of one type share their placeholder, so the same property read twice is one expression that
   * ClickHouse computes once.
   */
  add(value: unknown, type: string): string {
    const memo = `${type}\u0000${JSON.stringify(value)}`;
    let placeholder = this.placeholders.get(memo);
    if (placeholder === undefined) {
      const name = `p${this.placeholders.size}`;
      this.values[name] = value;
      placeholder = `{${name}:${type}}`;
      this.placeholders.set(memo, placeholder);
    }
    return placeholder;
  }
}
