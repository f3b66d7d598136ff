/**
 * Ingestion warnings raised by person processing, with PostHog's type names and detail keys
 * (docs/ingestion.md#ingestion-warnings) so the warnings listing reads like PostHog's. The event itself is
 * still processed.
 */
export type PersonWarning =
  | {
      type: 'cannot_merge_with_illegal_distinct_id';
      details: { illegalDistinctId: string; otherDistinctId: string; eventUuid: string };
    }
  | {
      type: 'cannot_merge_already_identified';
      details: { sourcePersonDistinctId: string; targetPersonDistinctId: string; eventUuid: string };
    }
  | {
      type: 'person_properties_size_violation';
      details: { personUuid: string; distinctId: string; eventUuid: string; sizeBytes: number; maxBytes: number };
    };
