/** The LIKE/ILIKE pattern of a search: texts that contain `value`, its wildcards and backslashes matching only themselves. */
export function containsPattern(value: string): string {
  return `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
