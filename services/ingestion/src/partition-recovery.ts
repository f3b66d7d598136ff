/**
 * What this process knows of one bus partition between its batches, so that a batch delivered again never
 * applies person updates twice (that would bump versions again and re-apply `$set`s that later events had
 * overwritten). batch.ts asks it, before processing a batch, what it may reuse and what it must check.
 *
 * A batch is one of four deliveries, told apart by its first offset:
 *
 * | Delivery     | When                                                      | Effect                                          |
 * |--------------|-----------------------------------------------------------|-------------------------------------------------|
 * | `first`      | nothing of the partition handled here yet                 | checked against ClickHouse                      |
 * | `next`       | starts where the last batch handled here ended            | none: a check under way goes on                 |
 * | `redelivery` | starts where the last failed batch started                | reuses that attempt's results; checked again    |
 * |              |                                                           | unless that batch was a `next`                  |
 * | `reassigned` | anything else: the partition was consumed elsewhere since | forgets a failed attempt; checked against       |
 * |              |                                                           | ClickHouse                                      |
 *
 * Two things carry over between deliveries:
 * - **Checking** for stored events: a batch that does not start where the last one handled here ended may
 *   hold events an earlier, uncommitted delivery stored (a crash, or another consumer before a rebalance).
 *   Its events are looked up in ClickHouse and those found are skipped whole: an events row is written, and
 *   made durable, after everything else its event produced. Stored events are a prefix of the partition (a
 *   delivery stores whole batches, in order), so checking stops at the first batch that holds none.
 * - **The failed attempt**: what processing returned for each message of a batch that failed later, by
 *   offset, reused when the batch comes again; and, when its failure left the outcome of its person writes
 *   unknown (a connection broken around a COMMIT), those writes with the results that rely on them: settled
 *   against Postgres first, so what was stored is reused rather than applied twice. A `first` or `reassigned`
 *   delivery forgets it: what was processed here may be older than what another consumer stored since.
 */
import type { Processed } from './process';

export type Delivery = 'first' | 'next' | 'redelivery' | 'reassigned';

/** Person writes whose outcome is unknown; `settle` finds out which were stored. */
export interface UnsettledWrites {
  settle(): Promise<void>;
}

/** One message's result, by its offset. */
export interface ProcessedMessage {
  offset: string;
  processed: Processed;
}

export class PartitionRecovery {
  /** The offset after the last batch handled here; undefined before the first. */
  private nextOffset: string | undefined;
  /** Where the last failed batch started: its redelivery starts there too. */
  private failedAt: string | undefined;
  private checking = true;
  /** Results of the failed attempt that hold, by offset. */
  private readonly remembered = new Map<string, Processed>();
  /** Person writes of the failed attempt whose outcome is unknown, and the results relying on them. */
  private unsettled: { writes: UnsettledWrites; results: ProcessedMessage[] } | undefined;

  /** The transition a batch starting at `firstOffset` makes; say `handled` or `failed` when it is done. */
  begin(firstOffset: string): Delivery {
    const delivery = this.deliveryOf(firstOffset);
    switch (delivery) {
      case 'next':
        break;
      case 'redelivery':
        // The failed batch did not continue the last one either: it was checked, and so is its redelivery.
        if (firstOffset !== this.nextOffset) this.checking = true;
        break;
      case 'first':
      case 'reassigned':
        this.checking = true;
        this.remembered.clear();
        this.unsettled = undefined;
        break;
    }
    return delivery;
  }

  private deliveryOf(firstOffset: string): Delivery {
    if (firstOffset === this.failedAt) return 'redelivery';
    if (firstOffset === this.nextOffset) return 'next';
    return this.nextOffset === undefined ? 'first' : 'reassigned';
  }

  /** Whether the batch's events must be looked up in ClickHouse before they are processed. */
  get checksStoredEvents(): boolean {
    return this.checking;
  }

  /** The lookup found `count` of the batch's events stored: none means every later event is new. */
  storedEventsFound(count: number): void {
    if (count === 0) this.checking = false;
  }

  /** What the failed attempt returned for the message at `offset`, when that holds. */
  rememberedAt(offset: string): Processed | undefined {
    return this.remembered.get(offset);
  }

  /**
   * Keeps the results that hold for a redelivery; returns the others, which rely on a person change staged
   * and not (known to be) stored.
   */
  remember(results: readonly ProcessedMessage[]): ProcessedMessage[] {
    const unstored: ProcessedMessage[] = [];
    for (const result of results) {
      if (result.processed.kind === 'event' && result.processed.staged?.stored === false) unstored.push(result);
      else this.remembered.set(result.offset, result.processed);
    }
    return unstored;
  }

  /** The attempt is failing with `writes` in an unknown state: `results` rely on them. */
  leaveUnsettled(writes: UnsettledWrites, results: ProcessedMessage[]): void {
    if (results.length > 0) this.unsettled = { writes, results };
  }

  /** The person writes to settle before this delivery is processed. */
  get unsettledWrites(): UnsettledWrites | undefined {
    return this.unsettled?.writes;
  }

  /** The unsettled writes were settled: the results relying on the ones found stored hold. */
  settled(): void {
    if (this.unsettled) this.remember(this.unsettled.results);
    this.unsettled = undefined;
  }

  /** The batch that began at `firstOffset` was not stored; it will be delivered again. */
  failed(firstOffset: string): void {
    this.failedAt = firstOffset;
  }

  /** The batch ending at `lastOffset` is durable: its commit may follow, and nothing of a failed attempt is kept. */
  handled(lastOffset: string): void {
    this.nextOffset = (BigInt(lastOffset) + 1n).toString();
    this.failedAt = undefined;
    this.remembered.clear();
    this.unsettled = undefined;
  }
}
