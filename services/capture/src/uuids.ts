import { createHash } from 'node:crypto';
import { uuidv5 } from '@plover/core';

/** The namespace of the uuids capture derives (a random v4, fixed forever: changing it breaks retries' dedupe). */
const NAMESPACE = '6f0b7f2e-3c1d-4e8a-9b5f-2d7c1a9e4b60';

/**
 * The uuid of each event of one request that came without one, derived from the request rather than drawn at
 * random: the project, the topic, a SHA-256 of the request's decoded text and the event's place in it
 * (`batch__3__`, `3__`, or `` for a lone event). An SDK that retries a request it got no 200 for sends the same
 * text, so each event gets the uuid it got the first time, and whatever of the first try reached the bus (a
 * partition that took its events while another failed, a produce that landed after its timeout) is the same event
 * to ingestion and ClickHouse, stored once. The digest is computed at most once per request, and only when an
 * event needs it.
 */
export function requestUuids(projectId: number, topic: string, text: string | Buffer): (position: string) => string {
  let digest: string | undefined;
  return (position) => {
    digest ??= createHash('sha256').update(text).digest('hex');
    return uuidv5(`${projectId}\n${topic}\n${digest}\n${position}`, NAMESPACE);
  };
}
