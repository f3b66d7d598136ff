import fs from 'node:fs';
import path from 'node:path';
import { sections, variablesOf } from '@plover/config';

const ROOT = path.resolve(__dirname, '../../..');
const every = variablesOf({
  logging: sections.logging,
  http: sections.http(8000),
  dataDir: sections.dataDir,
  postgres: sections.postgres,
  clickhouse: sections.clickhouse,
  kafka: sections.kafka,
  bootstrap: sections.bootstrap,
  capture: sections.capture,
  captureWorkers: sections.captureWorkers,
  ingestion: sections.ingestion,
  decide: sections.decide,
  decideWorkers: sections.decideWorkers,
  management: sections.management,
  analysis: sections.analysis(false),
});

describe('configuration docs', () => {
  const example = fs.readFileSync(path.join(ROOT, '.env.example'), 'utf8');
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

  it.each(Object.keys(every))('.env.example sets %s', (variable) => {
    expect(example).toMatch(new RegExp(`^${variable}=`, 'm'));
  });

  it.each(Object.keys(every))('the README configuration table lists %s', (variable) => {
    expect(readme).toMatch(new RegExp(`^\\| \`${variable}\` \\|`, 'm'));
  });

  it('documents no variable that no section reads', () => {
    const documented = [...example.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]);
    expect(documented.filter((name) => !(name! in every))).toEqual([]);
  });
});
