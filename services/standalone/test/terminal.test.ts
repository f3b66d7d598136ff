import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Credentials } from '@plover/accounts';
import { prettyLogStream, readyBanner } from '../src/terminal';

const credentials: Credentials = {
  organization: { id: 'o', name: 'Org' },
  project: { id: 1, uuid: 'p', name: 'Default project', api_token: 'phc_project', timezone: 'UTC' },
  user: { id: 1, uuid: 'u', email: 'admin@plover.local' },
  personal_api_key: { id: 'k', label: 'Bootstrap key', value: 'phx_personal', scopes: ['*'] },
};

describe('the log format', () => {
  const terminal = { isTTY: true } as NodeJS.WriteStream;
  const pipe = { isTTY: false } as NodeJS.WriteStream;

  it('is readable text on a terminal and JSON lines elsewhere unless LOG_FORMAT says otherwise', () => {
    expect(prettyLogStream('auto', terminal)).toBeDefined();
    expect(prettyLogStream('auto', pipe)).toBeUndefined();
    expect(prettyLogStream('json', terminal)).toBeUndefined();
    expect(prettyLogStream('pretty', pipe)).toBeDefined();
  });
});

describe('the ready banner', () => {
  it('on the first start: where to send events, the console, both keys and the posthog-js snippet', () => {
    const banner = readyBanner({ host: '0.0.0.0', port: 8000, dataDir: '/srv/plover', created: credentials });
    expect(banner).toContain('Send events to    http://localhost:8000 ');
    expect(banner).toContain('Web console       http://localhost:8000/');
    expect(banner).toContain('Project API key   phc_project');
    expect(banner).toContain('Personal API key  phx_personal');
    expect(banner).toContain("posthog.init('phc_project', { api_host: 'http://localhost:8000' })");
    expect(banner).not.toContain('Read-only');
  });

  it('on a start below the disk watermark: says it is read-only, and why', () => {
    const lowDisk = 'low disk space: postgres has 4.2 MB free in /srv/plover/postgres, below the 315 MB watermark (PLOVER_DISK_MIN_FREE_MB)';
    const banner = readyBanner({ host: '0.0.0.0', port: 8000, dataDir: '/srv/plover', created: credentials, lowDisk });
    expect(banner).toContain(`  Read-only for now: ${lowDisk}`);
  });

  it('on a later start: the project token from credentials.json, never the personal key', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-banner-'));
    try {
      fs.writeFileSync(path.join(dataDir, 'credentials.json'), JSON.stringify(credentials));
      const banner = readyBanner({ host: '127.0.0.1', port: 18000, dataDir });
      expect(banner).toContain("posthog.init('phc_project', { api_host: 'http://127.0.0.1:18000' })");
      expect(banner).not.toContain('phx_');
      fs.rmSync(path.join(dataDir, 'credentials.json'));
      expect(readyBanner({ host: '::', port: 8000, dataDir })).not.toContain('posthog.init');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
