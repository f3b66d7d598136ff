/**
 * Distributed mode's capture and ingestion as separate processes (services/<name>/src/main.ts) on one real Kafka,
 * under a topic prefix of their own (KAFKA_TOPIC_PREFIX), so that a run shares the broker with other runs and
 * suites without sharing their topics or consumer groups. Used by the many-consumers suite and its benchmark.
 */
import { randomBytes } from 'node:crypto';
import { AssignerProtocol, Kafka, logLevel, type Admin } from 'kafkajs';
import type { WorkloadEvent } from './person-workload';
import { startService, type RunningService } from './processes';

/** The consumer group and topic ingestion's live events go through (docs/ingestion.md, "Topics and ordering"). */
const EVENTS_TOPIC = 'events';
const EVENTS_GROUP = 'ingestion';

export interface ClusterOptions {
  /** What every process gets: DATABASE_URL, CLICKHOUSE_URL, CLICKHOUSE_DATABASE, KAFKA_BROKERS, … */
  env: Record<string, string>;
  /** KAFKA_TOPIC_PARTITIONS: the partitions capture and ingestion create their topics with. */
  partitions: number;
  /** Part of the topic prefix, to tell runs apart on the broker. */
  label: string;
}

export class IngestionCluster {
  readonly prefix: string;
  readonly captures: RunningService[] = [];
  /** Every consumer started, in order, including those stopped or killed since. */
  readonly consumers: RunningService[] = [];
  private readonly env: Record<string, string>;
  private readonly admin: Admin;
  private readonly connected: Promise<void>;

  constructor(options: ClusterOptions) {
    this.prefix = `plover-${options.label}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}.`;
    this.env = {
      ...options.env,
      KAFKA_TOPIC_PREFIX: this.prefix,
      KAFKA_TOPIC_PARTITIONS: String(options.partitions),
      PORT: '0',
      HOST: '127.0.0.1',
    };
    const brokers = required(options.env.KAFKA_BROKERS, 'KAFKA_BROKERS').split(',');
    this.admin = new Kafka({ clientId: 'plover-ingestion-cluster', brokers, logLevel: logLevel.NOTHING }).admin();
    this.connected = this.admin.connect();
  }

  async startCapture(): Promise<RunningService> {
    const capture = await startService('capture', this.env);
    this.captures.push(capture);
    return capture;
  }

  /** Starts one ingestion process; resolves once it listens, i.e. once it has joined the consumer group. */
  async startConsumer(extraEnv: Record<string, string> = {}): Promise<RunningService> {
    const consumer = await startService('ingestion', { ...this.env, ...extraEnv });
    this.consumers.push(consumer);
    return consumer;
  }

  /**
   * Sends each stream through a capture of its own (stream i to capture i mod captures), in `/batch/` requests of
   * `requestEvents`, one request at a time per stream so that each distinct id's events reach the bus in order.
   * The streams go side by side. `onSent` hears of every acknowledged request.
   */
  async send(token: string, streams: readonly WorkloadEvent[][], requestEvents = 500, onSent?: (events: number) => void): Promise<void> {
    if (this.captures.length === 0) throw new Error('no capture process started');
    await Promise.all(
      streams.map(async (stream, index) => {
        const capture = this.captures[index % this.captures.length]!;
        for (let start = 0; start < stream.length; start += requestEvents) {
          const batch = stream.slice(start, start + requestEvents);
          const response = await fetch(`http://127.0.0.1:${capture.port}/batch/`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ api_key: token, batch }),
          });
          if (response.status !== 200) throw new Error(`capture answered ${response.status}: ${await response.text()}`);
          onSent?.(batch.length);
        }
      }),
    );
  }

  /** Partitions of the events topic on the broker. */
  async eventPartitions(): Promise<number> {
    await this.connected;
    const { topics } = await this.admin.fetchTopicMetadata({ topics: [this.prefix + EVENTS_TOPIC] });
    return topics[0]?.partitions.length ?? 0;
  }

  /** Messages of the events topic that the ingestion group has not committed yet. */
  async uncommitted(): Promise<number> {
    await this.connected;
    const topic = this.prefix + EVENTS_TOPIC;
    const [ends, [committed]] = await Promise.all([
      this.admin.fetchTopicOffsets(topic),
      this.admin.fetchOffsets({ groupId: this.prefix + EVENTS_GROUP, topics: [topic] }),
    ]);
    const at = new Map((committed?.partitions ?? []).map((partition) => [partition.partition, Math.max(0, Number(partition.offset))]));
    return ends.reduce((sum, end) => sum + Number(end.high) - (at.get(end.partition) ?? 0), 0);
  }

  /** Partitions of the events topic assigned to each member of the ingestion group (empty while it rebalances). */
  async assignments(): Promise<number[]> {
    await this.connected;
    const {
      groups: [group],
    } = await this.admin.describeGroups([this.prefix + EVENTS_GROUP]);
    if (group?.state !== 'Stable') return [];
    return group.members.map((member) => {
      const assignment = AssignerProtocol.MemberAssignment.decode(member.memberAssignment);
      return assignment?.assignment[this.prefix + EVENTS_TOPIC]?.length ?? 0;
    });
  }

  /** Stops every process still running (SIGTERM) and deletes the run's topics and consumer groups. */
  async close(): Promise<void> {
    await Promise.all([...this.captures, ...this.consumers].map((service) => service.stop()));
    await this.connected;
    try {
      const topics = (await this.admin.listTopics()).filter((topic) => topic.startsWith(this.prefix));
      if (topics.length > 0) await this.admin.deleteTopics({ topics });
      const groups = (await this.admin.listGroups()).groups.map((group) => group.groupId).filter((id) => id.startsWith(this.prefix));
      if (groups.length > 0) {
        await this.admin.deleteGroups(groups).catch((error: unknown) => {
          // A group that Kafka removed meanwhile (empty, without offsets) is gone already: that is the point.
          const failed = (error as { groups?: { groupId: string; error?: { type?: string } }[] }).groups ?? [];
          const left = failed.filter((group) => group.error && group.error.type !== 'GROUP_ID_NOT_FOUND');
          if (failed.length === 0 || left.length > 0) {
            throw new Error(`deleting consumer groups failed: ${JSON.stringify(left.map((group) => [group.groupId, group.error?.type]))}`, { cause: error });
          }
        });
      }
    } finally {
      await this.admin.disconnect();
    }
  }
}

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is required`);
  return value;
}
