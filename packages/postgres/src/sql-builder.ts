/**
 * Builds a statement's parameter list alongside its text: `bind(value)` appends the value and returns its
 * placeholder, so dynamic conditions never put a value into the SQL text.
 */
export class SqlBuilder {
  readonly params: unknown[];
  constructor(initial: readonly unknown[] = []) {
    this.params = [...initial];
  }
  bind(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }
}

/** The LIKE/ILIKE pattern of a search: texts that contain `value`, its wildcards and backslashes matching only themselves. */
export function containsPattern(value: string): string {
  return `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
