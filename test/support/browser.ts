/**
 * Headless Chromium for tests that must see a page as a person would: Debian's `chromium` driven by
 * playwright-core (never a browser playwright downloads). Outside CI a missing browser skips those suites;
 * under CI=true it fails the run (.ci/run installs it), as for the other tools in services.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

const EXECUTABLE = '/usr/bin/chromium';

/** Flags that keep the browser off the network except for the pages a test opens (and off a sandbox root lacks). */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Screenshots and other files a person may want to look at after a run (gitignored). */
export const ARTIFACTS_DIR = path.resolve(__dirname, '../../test-artifacts');

export function browserAvailable(): boolean {
  const found = fs.existsSync(EXECUTABLE);
  if (!found && process.env.CI === 'true') throw new Error(`${EXECUTABLE} is not installed: under CI=true the browser suites must run`);
  return found;
}

/** `describe` when Chromium is installed, `describe.skip` otherwise (never under CI, see browserAvailable). */
export function describeWithBrowser(): jest.Describe {
  return browserAvailable() ? describe : describe.skip;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: EXECUTABLE, args: ARGS });
}

/** Where to write an artefact named `name`, creating the directory. */
export function artifactPath(name: string): string {
  fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return path.join(ARTIFACTS_DIR, name);
}
