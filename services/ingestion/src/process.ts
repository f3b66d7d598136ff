/**
 * One event through persons and groups to its rows; one unreadable message to its dead letter. No batching,
 * no retries and no writes to ClickHouse here: batch.ts orders the calls and stores what they return.
 */
import type { BusMessage } from '@plover/bus';
import type { EventRow, IngestionWarningRow, PersonOverrideRow } from '@plover/clickhouse';
import { StorageError } from '@plover/core';
import type { GeoIpLookup } from '@plover/geoip';
import type { BatchPersonStore, EventPersonStore, GroupStore, PersonStore, StagedChange } from '@plover/persons';
import { deadLetterOf, type DeadLetter } from './dead-letter';
import { withGeoIp, type AnonymizedProjects } from './geoip';
import type { CapturedInput, Unreadable } from './message';
import { normalizeProperties, type Properties } from './normalize';
import { eventRow, overrideRow, warningRow, type Warning } from './rows';

export type DeadLettered = { kind: 'dead_letter'; deadLetter: DeadLetter; warnings: IngestionWarningRow[] };

export type Processed =
  /** `staged`: the row relies on a person change staged for the batch's flush (packages/persons BatchPersonStore). */
  | {
      kind: 'event';
      row: EventRow;
      /** The row's properties before they were serialized (for the definitions upkeep, which reads their keys and values). */
      properties: Properties;
      warnings: IngestionWarningRow[];
      overrides: PersonOverrideRow[];
      staged?: StagedChange;
    }
  | DeadLettered
  /** Found in ClickHouse while recovering: stored by an earlier delivery, with everything that goes with it. */
  | { kind: 'already_stored' };

export interface EventProcessorOptions {
  persons: PersonStore;
  groups: GroupStore;
  /** Projects whose events are stored without `$ip`. */
  anonymized: AnonymizedProjects;
  /** Locates `$ip` (docs/web-analytics.md#geoip); no GeoIP properties when undefined. */
  geoip: GeoIpLookup | undefined;
  now: () => Date;
}

export class EventProcessor {
  constructor(private readonly options: EventProcessorOptions) {}

  /**
   * The batch's view of the persons of the inputs' distinct ids, read with one statement per project, for
   * `process` to decide the events that change nothing without a read each and, with `stageWrites`, to stage
   * person property changes until its flush instead of writing each (packages/persons BatchPersonStore).
   */
  async readPersons(inputs: readonly CapturedInput[], stageWrites: boolean): Promise<BatchPersonStore> {
    const distinctIds = new Map<number, string[]>();
    for (const input of inputs) {
      const ids = distinctIds.get(input.projectId);
      if (ids) ids.push(input.distinctId);
      else distinctIds.set(input.projectId, [input.distinctId]);
    }
    return this.options.persons.batch(distinctIds, { stageWrites });
  }

  /** `persons`: the batch's view of them (readPersons). */
  async process(input: CapturedInput, persons: EventPersonStore): Promise<Processed> {
    const { geoip, anonymized } = this.options;
    const normalized = normalizeProperties(input.event, geoip ? withGeoIp(input.properties, geoip) : input.properties, input.sentAt);
    // After GeoIP, as PostHog does: the address is located, then not stored.
    if ('$ip' in normalized.properties && (await anonymized.anonymizes(input.projectId))) delete normalized.properties.$ip;
    const [person, groups] = await Promise.all([
      persons.processEvent(input.projectId, {
        uuid: input.uuid,
        event: input.event,
        distinctId: input.distinctId,
        timestamp: input.timestamp,
        properties: normalized.properties,
      }),
      this.options.groups.processEvent(input.projectId, { event: input.event, timestamp: input.timestamp, properties: normalized.properties }),
    ]);
    const warnings: Warning[] = [...input.captureWarnings, ...person.warnings];
    if (input.invalidTimestamp !== undefined) {
      // PostHog's older pipeline: the event is kept at the time capture received it, with this warning.
      warnings.push({ type: 'ignored_invalid_timestamp', details: { eventUuid: input.uuid, field: 'timestamp', value: input.invalidTimestamp } });
    }
    return {
      kind: 'event',
      row: eventRow(input, normalized, person, groups, this.options.now()),
      properties: normalized.properties,
      warnings: warnings.map((warning) => warningRow({ projectId: input.projectId, eventUuid: input.uuid, message: input.message }, warning)),
      overrides: person.overrides.map((override) => overrideRow(input.projectId, override)),
      staged: person.staged,
    };
  }

  /** The dead letter of a message, and its warning when the message names a project (the listing is per project). */
  deadLetter(message: BusMessage, unreadable: Unreadable): DeadLettered {
    const deadLetter = deadLetterOf(message, unreadable, this.options.now());
    const warning: Warning = {
      type: 'event_dead_lettered',
      details: {
        reason: unreadable.reason,
        detail: unreadable.detail,
        eventUuid: unreadable.eventUuid,
        topic: message.topic,
        partition: message.partition,
        offset: message.offset,
      },
    };
    const warnings = unreadable.projectId === null ? [] : [warningRow({ projectId: unreadable.projectId, eventUuid: unreadable.eventUuid, message }, warning)];
    return { kind: 'dead_letter', deadLetter, warnings };
  }

  /** The dead letter of an event whose processing failed for a reason of its own (see isEventFault). */
  failedEvent(input: CapturedInput, error: unknown): DeadLettered {
    const detail = error instanceof Error ? error.message : String(error);
    return this.deadLetter(input.message, { reason: 'processing_failed', detail, projectId: input.projectId, eventUuid: input.uuid });
  }
}

/**
 * SQLSTATE classes that blame the statement's data: 22 data exception, 23 integrity constraint violation (e.g.
 * the project was deleted), 54 program limit exceeded. The same event would fail the same way forever.
 */
const EVENT_DATA_SQLSTATE_CLASSES = new Set(['22', '23', '54']);
const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * Whether processing failed because of the event itself, so it is dead-lettered and the batch goes on.
 * Anything else (an outage, a permission or schema problem, a closed handle) is not the event's fault: the
 * batch is redelivered instead, and a permanent cause stalls ingestion loudly rather than dead-letter
 * every event. An exception that is not a StorageError is this input tripping a bug: dead-lettered, so one
 * odd event cannot stop the pipeline.
 */
export function isEventFault(error: unknown): boolean {
  if (!(error instanceof StorageError)) return true;
  const { code } = error;
  return !error.retriable && code !== undefined && SQLSTATE.test(code) && EVENT_DATA_SQLSTATE_CLASSES.has(code.slice(0, 2));
}
