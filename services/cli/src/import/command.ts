import path from 'node:path';
import { Option, type Command } from 'commander';
import { action, apiOf, output, positiveInteger, progressFactory, withConnection, type ConnectionOptions } from '../command';
import { describeRejection, runImport, type FormatOption, type ImportSummary } from './run';

interface ImportCommandOptions extends ConnectionOptions {
  format: FormatOption;
  dryRun?: boolean;
  resume?: boolean;
  strict?: boolean;
  batchSize: number;
  stateDir?: string;
  rejected?: string;
}

const count = new Intl.NumberFormat('en-US');

function human(summary: ImportSummary): string {
  const lines = [
    summary.dryRun
      ? `checked: ${count.format(summary.accepted)} events can be sent, ${count.format(summary.rejected)} records rejected (nothing was sent)`
      : `imported ${count.format(summary.accepted)} events into project ${summary.project}, ${count.format(summary.rejected)} records rejected`,
  ];
  for (const file of summary.files) {
    const skipped = file.skipped > 0 ? `, ${count.format(file.skipped)} records done by an earlier run` : '';
    lines.push(`  ${file.file} (${file.format}): ${count.format(file.accepted)} accepted, ${count.format(file.rejected)} rejected${skipped}`);
    if (file.error) lines.push(`    stopped early: ${file.error}`);
  }
  if (summary.firstRejections.length > 0) {
    lines.push('first rejections:', ...summary.firstRejections.map((rejected) => `  ${describeRejection(rejected)}`));
  }
  if (summary.rejectedFile) lines.push(`rejected records: ${summary.rejectedFile}`);
  return `${lines.join('\n')}\n`;
}

export function importCommand(program: Command): void {
  withConnection(program.command('import'))
    .summary('import events from files (PostHog exports, JSON lines, CSV, Parquet)')
    .description(
      'Sends the events of each FILE to a running Plover through capture’s historical-migration path (POST /batch/ with ' +
        'historical_migration: true): validated, normalized and person-processed as SDK events, counted only once the bus ' +
        'acknowledged them, and never delaying live traffic. Events without a uuid get one derived from the file name, ' +
        'record number and text, so running the same import again stores nothing twice. gzip files are read as streams.',
    )
    .argument('<file...>', 'input files (.jsonl, .ndjson, .json, .csv, .parquet; any of the text ones may be .gz)')
    .addOption(
      new Option('--format <format>', 'how to read the files: by extension, a PostHog batch export, JSON lines of SDK events, CSV, Parquet')
        .choices(['auto', 'posthog', 'jsonl', 'csv', 'parquet'])
        .default('auto'),
    )
    .option('--dry-run', 'read and check every record, send nothing')
    .option('--resume', 'skip the records an earlier run of the same files had acknowledged (its state files)')
    .option('--strict', 'read every file first; if any record would be rejected, send nothing')
    .option('--batch-size <n>', 'events per request', positiveInteger('--batch-size'), 1000)
    .option('--state-dir <dir>', 'where the state files go (default: beside each input, FILE.plover-import.json)')
    .option('--rejected <file>', 'file of rejected records, JSON lines (default: plover-rejected-<time>.jsonl here)')
    .option('--no-progress', 'no progress bar or progress lines')
    .addHelpText(
      'after',
      `
Examples:
  $ plover import export-2024-*.jsonl.gz --project 2
  $ plover import events.csv --dry-run
  $ plover import events.jsonl --resume          # after an interrupted run
  $ PLOVER_HOST=https://plover.example.com PLOVER_API_KEY=phx_… plover import events.parquet --json

Exit codes: 0 everything imported; 1 bad arguments, unreachable server, refused key, or --strict found a problem
(nothing sent); 2 partial: some records were rejected or a file could not be read to its end (the rest was imported).`,
    )
    .action(
      action(async (files: string[], options: ImportCommandOptions) => {
        const summary = await runImport(
          options.dryRun ? undefined : apiOf(options),
          {
            files,
            format: options.format,
            dryRun: options.dryRun === true,
            resume: options.resume === true,
            strict: options.strict === true,
            batchSize: options.batchSize,
            stateDir: options.stateDir,
            rejectedFile: options.rejected ?? path.resolve(`plover-rejected-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`),
          },
          progressFactory(options),
        );
        output(options, summary, () => human(summary));
        return summary.exitCode;
      }),
    );
}
