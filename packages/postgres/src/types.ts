/**
 * Result values both adapters produce, so the same SQL returns the same rows from PGlite and from a real
 * server. These are the types whose driver defaults differ (pg: int8 as string, date as a Date at local
 * midnight, interval as an object); every other type already agrees.
 */
export const OID = { INT8: 20, DATE: 1082, INTERVAL: 1186 } as const;

/** Array types of the OIDs above. PGlite derives array parsers from element parsers; pg needs them listed. */
export const ARRAY_ELEMENT_OID: Readonly<Record<number, number>> = { 1016: OID.INT8, 1182: OID.DATE, 1187: OID.INTERVAL };

/** count(*) and bigserial ids as numbers while exact; beyond 2^53 a bigint rather than a rounded number (PGlite's rule). */
export function parseInt8(text: string): number | bigint {
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : BigInt(text);
}

export const RESULT_PARSERS: Readonly<Record<number, (text: string) => unknown>> = {
  [OID.INT8]: parseInt8,
  // A calendar date is not an instant: 'YYYY-MM-DD' rather than a Date at the process's or UTC midnight.
  [OID.DATE]: (text) => text,
  // Postgres' own text form, e.g. '1 day 02:00:00'.
  [OID.INTERVAL]: (text) => text,
};
