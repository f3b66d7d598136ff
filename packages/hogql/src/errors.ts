/**
 * What can be wrong with a HogQL query, with where in the text it is (character offsets, as the parser gives
 * them). The query API answers each as a 400 whose `code` is the kind and whose `detail` is the message.
 */
export type HogQLErrorKind = 'syntax_error' | 'query_error' | 'not_implemented' | 'resolution_error';

export class HogQLError extends Error {
  constructor(
    readonly kind: HogQLErrorKind,
    message: string,
    /** Offsets into the query text, when the error belongs to one part of it. */
    readonly start?: number,
    readonly end?: number,
  ) {
    super(message);
    this.name = 'HogQLError';
  }
}
