import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { formatBytes } from '@plover/core';
import type { Api } from './api';
import { action, apiOf, positiveInteger, withConnection, type ConnectionOptions } from './command';
import { EXIT, UserError } from './errors';

/** One Prometheus sample: `name{label="value",…} number`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped; label values unescaped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

export interface Status {
  host: string;
  health: { ok: boolean; status: number };
  ready: { ok: boolean; status: number; checks: Record<string, string> };
  /** Per bus topic the ingestion consumer reads: age of the newest message of its last batch, messages handled. */
  ingestion: Array<{ topic: string; lagSeconds: number | null; messages: number }>;
  /** Events stored with a timestamp today, in the project's timezone (the trend API's "All events"); null without an API key. */
  eventsToday: number | null;
  /** Ingestion warnings of the last hour, by type; null without an API key. */
  warningsLastHour: Record<string, number> | null;
  /** Embedded mode's disk use (null where the host does not expose it: distributed mode). */
  disk: DiskUse | null;
  /** Why the project's part is missing, when it is. */
  projectError?: string;
}

export interface DiskUse {
  /** Bytes of each store: local_log, postgres, clickhouse, replay (part of clickhouse). */
  stores: Record<string, number>;
  /** Free space of the fullest store disk, and the watermark below which writes are refused. */
  freeBytes: number;
  minFreeBytes: number;
  /** How fast the free space shrank over the server's last 15 minutes (negative: it grew). */
  useBytesPerSecond: number;
  /** Seconds until the free space reaches the watermark at that rate; null while it does not shrink. */
  lastsSeconds: number | null;
}

const LAG = 'plover_ingestion_lag_seconds';
const MESSAGES = 'plover_ingestion_messages_total';

/** The disk use among `samples`, from the gauges embedded mode exposes (services/standalone/src/disk.ts). */
function diskUse(samples: Sample[]): DiskUse | null {
  const value = (name: string) => samples.find((sample) => sample.name === name)?.value;
  const freeBytes = value('plover_disk_free_bytes');
  if (freeBytes === undefined) return null;
  const minFreeBytes = value('plover_disk_min_free_bytes') ?? 0;
  const useBytesPerSecond = value('plover_disk_use_bytes_per_second') ?? 0;
  const stores = Object.fromEntries(
    samples.filter((sample) => sample.name === 'plover_store_bytes').map((sample) => [sample.labels.store ?? '', sample.value]),
  );
  const lastsSeconds = useBytesPerSecond > 0 ? Math.max(0, freeBytes - minFreeBytes) / useBytesPerSecond : null;
  return { stores, freeBytes, minFreeBytes, useBytesPerSecond, lastsSeconds };
}

/** `45 s`, `12 min`, `5.2 h`, `3.1 days`. */
function formatDuration(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  if (seconds < 48 * 3600) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} days`;
}

function describeDisk(disk: DiskUse): string {
  const store = (name: string, label: string) => (disk.stores[name] === undefined ? [] : [`${label} ${formatBytes(disk.stores[name])}`]);
  const replay = disk.stores.replay === undefined ? '' : ` (replay ${formatBytes(disk.stores.replay)} of it)`;
  const sizes = [...store('local_log', 'local log'), ...store('postgres', 'postgres'), ...store('clickhouse', 'clickhouse')].join(', ') + replay;
  const free = `${formatBytes(disk.freeBytes)} free, writes refused below ${formatBytes(disk.minFreeBytes)}`;
  const lasts =
    disk.lastsSeconds === null
      ? 'not shrinking over the last 15 min'
      : `lasts ~${formatDuration(disk.lastsSeconds)} at ${formatBytes(disk.useBytesPerSecond)}/s (the last 15 min's rate)`;
  return `  disk        ${sizes}; ${free}: ${lasts}`;
}

async function probe(api: Api, path: string): Promise<{ status: number; body: unknown }> {
  const response = await api.fetch(path);
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: response.status, body: text };
  }
}

async function projectPart(api: Api): Promise<Pick<Status, 'eventsToday' | 'warningsLastHour'>> {
  const trend = await api.json<{ result: Array<{ count: number }> }>(
    `${api.projectPath('insights/trend/')}?${new URLSearchParams({ events: JSON.stringify([{ id: null }]), date_from: 'dStart', refresh: 'true' }).toString()}`,
  );
  const since = Date.now() - 3_600_000;
  const warnings = await api.json<{ results: Array<{ type: string; timestamp: string }> }>(`${api.projectPath('ingestion_warnings/')}?limit=1000`);
  const byType: Record<string, number> = {};
  for (const warning of warnings.results) {
    if (Date.parse(warning.timestamp) < since) break;
    byType[warning.type] = (byType[warning.type] ?? 0) + 1;
  }
  return { eventsToday: trend.result[0]?.count ?? 0, warningsLastHour: byType };
}

/** What `plover status` shows: the process's health and readiness, the consumer's progress, today's events. */
export async function readStatus(api: Api): Promise<Status> {
  const health = await probe(api, '_health');
  const ready = await probe(api, '_ready');
  const metrics = await api.fetch('metrics');
  const samples = metrics.ok ? parseMetrics(await metrics.text()) : [];
  const topics = new Map<string, { lagSeconds: number | null; messages: number }>();
  const topic = (name: string) => topics.get(name) ?? topics.set(name, { lagSeconds: null, messages: 0 }).get(name)!;
  for (const sample of samples) {
    if (sample.name === LAG && sample.labels.topic) topic(sample.labels.topic).lagSeconds = sample.value;
    if (sample.name === MESSAGES && sample.labels.topic) topic(sample.labels.topic).messages += sample.value;
  }
  const status: Status = {
    host: api.base.origin,
    health: { ok: health.status === 200, status: health.status },
    ready: { ok: ready.status === 200, status: ready.status, checks: (ready.body as { checks?: Record<string, string> }).checks ?? {} },
    ingestion: [...topics].map(([name, values]) => ({ topic: name, ...values })).sort((a, b) => a.topic.localeCompare(b.topic)),
    disk: diskUse(samples),
    eventsToday: null,
    warningsLastHour: null,
  };
  if (!api.connection.apiKey) {
    status.projectError = 'no personal API key (--api-key, PLOVER_API_KEY): events and warnings not shown';
    return status;
  }
  try {
    Object.assign(status, await projectPart(api));
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    status.projectError = error.message;
  }
  return status;
}

export function describeStatus(status: Status): string {
  const checks = Object.entries(status.ready.checks)
    .map(([name, state]) => `${name} ${state}`)
    .join(', ');
  const lines = [
    `Plover at ${status.host}`,
    `  health      ${status.health.ok ? 'ok' : `failing (${status.health.status})`}`,
    `  ready       ${status.ready.ok ? 'ok' : `NOT READY (${status.ready.status})`}${checks ? ` — ${checks}` : ''}`,
  ];
  if (status.ingestion.length === 0) lines.push('  ingestion   no batch handled since the process started (or not exposed by this host)');
  for (const topic of status.ingestion) {
    const lag = topic.lagSeconds === null ? 'no batch yet' : `lag ${topic.lagSeconds.toFixed(1)} s`;
    lines.push(`  ingestion   ${topic.topic}: ${lag}, ${topic.messages} messages handled`);
  }
  if (status.disk) lines.push(describeDisk(status.disk));
  if (status.projectError) {
    lines.push(`  project     ${status.projectError}`);
  } else {
    lines.push(`  events      ${status.eventsToday} today`);
    const warnings = Object.entries(status.warningsLastHour ?? {});
    lines.push(`  warnings    ${warnings.length === 0 ? 'none in the last hour' : warnings.map(([type, n]) => `${type} ×${n}`).join(', ')}`);
  }
  return `${lines.join('\n')}\n`;
}

interface StatusOptions extends ConnectionOptions {
  watch?: boolean;
  interval: number;
}

export function statusCommand(program: Command): void {
  withConnection(program.command('status'))
    .summary('health, readiness, ingestion lag, disk use, today’s events and recent ingestion warnings')
    .description(
      'Asks a running Plover for /_health, /_ready (each dependency), /metrics (per bus topic the ingestion consumer reads: ' +
        'the age of the newest message it handled, and how many; in embedded mode the disk space of each store and how long the free ' +
        'space lasts at the rate it shrank over the last 15 minutes), the events stored today (the trend API, project timezone) ' +
        'and the ingestion warnings of the last hour. Exit code 0 when ready, 1 when not ready or unreachable.',
    )
    .option('--watch', 'refresh until interrupted')
    .option('--interval <seconds>', 'seconds between refreshes with --watch', positiveInteger('--interval'), 2)
    .addHelpText('after', '\nExamples:\n  $ plover status\n  $ plover status --watch --interval 5\n  $ plover status --json | jq .ready.ok')
    .action(
      action(async (options: StatusOptions) => {
        const api = apiOf(options);
        if (!options.watch) {
          const status = await readStatus(api);
          process.stdout.write(options.json ? `${JSON.stringify(status, null, 2)}\n` : describeStatus(status));
          return status.ready.ok ? EXIT.ok : EXIT.user;
        }
        for (;;) {
          // A server that goes away while watched is shown as such, and watched until it is back.
          const text = await readStatus(api).then(
            (status) => (options.json ? `${JSON.stringify(status)}\n` : describeStatus(status)),
            (error: unknown) => {
              if (!(error instanceof UserError)) throw error;
              return options.json ? `${JSON.stringify({ host: api.base.origin, error: error.message })}\n` : `${error.message}\n`;
            },
          );
          const clear = process.stdout.isTTY && !options.json ? '\x1b[2J\x1b[H' : '';
          process.stdout.write(`${clear}${text}${options.json ? '' : `(every ${options.interval} s; Ctrl-C to stop)\n`}`);
          await sleep(options.interval * 1000);
        }
      }),
    );
}
