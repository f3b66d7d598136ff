/**
 * Bus messages as capture produces them (packages/contracts `CapturedEventMessage`, services/capture's
 * normalize.ts): the envelope with the normalized event nested in `data`, keyed `team_id:distinct_id`; with
 * `stringData`, as the previous version wrote them (`data` the event as a JSON string), which are still read.
 */
import type { OutgoingMessage } from '@plover/bus';
import { capturedEventKey, type CapturedEvent, type CapturedEventMessage, type CapturedEventWarning } from '@plover/contracts';
import { uuidv7 } from '@plover/core';

export const T0 = new Date('2024-05-01T12:00:00.000Z');
/** When capture received the test events; an unusable event timestamp is replaced by it. */
export const CAPTURED_AT = new Date('2024-05-01T13:00:00.000Z');

export interface CapturedOptions {
  uuid?: string;
  /** Minutes after T0. */
  minutes?: number;
  /** Sent as is instead of a time derived from `minutes`. */
  timestamp?: string;
  sentAt?: string;
  historical?: boolean;
  /** `data` as the event's JSON string, as capture wrote it before the event was nested. */
  stringData?: boolean;
  /** Warnings capture raised for the event. */
  warnings?: CapturedEventWarning[];
}

export function capturedEvent(
  projectId: number,
  distinctId: string,
  event: string,
  properties: Record<string, unknown> = {},
  options: CapturedOptions = {},
): CapturedEventMessage {
  const uuid = options.uuid ?? uuidv7();
  const data: CapturedEvent = {
    uuid,
    event,
    distinct_id: distinctId,
    properties,
    timestamp: options.timestamp ?? new Date(T0.getTime() + (options.minutes ?? 0) * 60_000).toISOString(),
  };
  return {
    uuid,
    team_id: projectId,
    distinct_id: distinctId,
    ip: null,
    now: CAPTURED_AT.toISOString(),
    sent_at: options.sentAt ?? null,
    data: options.stringData ? JSON.stringify(data) : data,
    historical: options.historical ?? false,
    ...(options.warnings ? { warnings: options.warnings } : {}),
  };
}

export function busMessage(message: CapturedEventMessage): OutgoingMessage {
  return { key: capturedEventKey(message.team_id, message.distinct_id), value: Buffer.from(JSON.stringify(message)) };
}

/** `capturedEvent` straight to a bus message. */
export function captured(
  projectId: number,
  distinctId: string,
  event: string,
  properties: Record<string, unknown> = {},
  options: CapturedOptions = {},
): OutgoingMessage {
  return busMessage(capturedEvent(projectId, distinctId, event, properties, options));
}

/** The uuid a captured bus message carries. */
export function uuidOf(message: OutgoingMessage): string {
  return (JSON.parse(message.value.toString()) as CapturedEventMessage).uuid;
}
