import cliProgress from 'cli-progress';

/** 1234567 → "1.2 MB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** Seconds → "45s", "3m05s", "1h02m". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

const count = new Intl.NumberFormat('en-US');

/** Where a long command is: `done` of `total` (bytes of input, or rows), and how many items (events, rows) that made. */
export interface Position {
  done: number;
  total: number | undefined;
  items: number;
}

export interface ProgressOptions {
  /** What the command does, first on each line: `import`, `export events`. */
  label: string;
  /** What `items` counts: `events`, `rows`. */
  unit: string;
  /** What `done` and `total` measure: bytes of input (shown as sizes) or the same items. */
  measure: 'bytes' | 'items';
  /** A bar redrawn in place (a terminal), or a plain line every `intervalMs` (a pipe, a log file). */
  tty: boolean;
  stream: NodeJS.WritableStream;
  intervalMs: number;
}

/**
 * Progress on stderr (stdout stays the command's result): on a terminal a cli-progress bar redrawn in place with
 * the rate, the size done and the time left; otherwise one plain line every few seconds and one at the end, so
 * that a log of the run reads as a log.
 */
export class Progress {
  private readonly started = Date.now();
  private position: Position = { done: 0, total: undefined, items: 0 };
  private readonly multibar?: cliProgress.MultiBar;
  private readonly bar?: cliProgress.SingleBar;
  private readonly timer?: NodeJS.Timeout;

  constructor(private readonly options: ProgressOptions) {
    if (options.tty) {
      this.multibar = new cliProgress.MultiBar(
        {
          stream: options.stream,
          format: `${options.label} [{bar}] {percentage}% | {summary}`,
          hideCursor: true,
          clearOnComplete: false,
          stopOnComplete: false,
          fps: 10,
          barsize: 24,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar = this.multibar.create(1, 0, { summary: '' });
    } else {
      this.timer = setInterval(() => this.line(), options.intervalMs);
      this.timer.unref();
    }
  }

  private summary(): string {
    const { done, total, items } = this.position;
    const seconds = (Date.now() - this.started) / 1000;
    const rate = seconds > 0 ? items / seconds : 0;
    const size = (value: number) => (this.options.measure === 'bytes' ? formatBytes(value) : count.format(value));
    const parts = [`${count.format(items)} ${this.options.unit}`, `${count.format(Math.round(rate))} ${this.options.unit}/s`];
    parts.push(total === undefined ? size(done) : `${size(done)} of ${size(total)}`);
    if (total !== undefined && done > 0 && done < total) parts.push(`ETA ${formatDuration((seconds * (total - done)) / done)}`);
    parts.push(`${formatDuration(seconds)} elapsed`);
    return parts.join(' | ');
  }

  update(position: Position): void {
    this.position = position;
    if (this.bar) {
      this.bar.setTotal(Math.max(1, position.total ?? position.done));
      this.bar.update(position.done, { summary: this.summary() });
    }
  }

  /** A message between updates: above the bar on a terminal, as its own line otherwise. */
  log(message: string): void {
    if (this.multibar) this.multibar.log(`${message}\n`);
    else this.options.stream.write(`${message}\n`);
  }

  private line(): void {
    this.options.stream.write(`${this.options.label}: ${this.summary()}\n`);
  }

  stop(): void {
    if (this.multibar) {
      this.bar!.update(this.position.done, { summary: this.summary() });
      this.multibar.stop();
    } else {
      clearInterval(this.timer);
      this.line();
    }
  }
}

/** Makes the progress display of one run: a command's runner gets one, so that it never decides about terminals. */
export type ProgressFactory = (options: Pick<ProgressOptions, 'label' | 'unit' | 'measure'>) => Progress;
