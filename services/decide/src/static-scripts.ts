/**
 * posthog-js's browser bundles under `/static/`: with a self-hosted `api_host`, posthog-js loads its lazy parts
 * (the session recorder, surveys, web vitals, dead clicks, …) from `{api_host}/static/<name>.js?v=<its
 * version>`, or `/static/<version>/<name>.js` with `strict_script_versioning`, and the snippet loads
 * `/static/array.js`. They are served from the `posthog-js` package Plover depends on (docs/decide.md#static-scripts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Request, Response } from 'express';
import { ApiError } from '@plover/core';
import type { SdkRoute } from '@plover/http';

interface Script {
  body: Buffer;
  etag: string;
}

const PACKAGE_DIR = path.dirname(require.resolve('posthog-js/package.json'));
const DIST_DIR = path.join(PACKAGE_DIR, 'dist');
const { version: VERSION } = JSON.parse(readFileSync(path.join(PACKAGE_DIR, 'package.json'), 'utf8')) as { version: string };

/**
 * The files posthog-js publishes subresource-integrity hashes for, i.e. what PostHog's asset host serves under
 * `/static/`. Nothing else is ever read: a requested name is looked up here, never joined into a path.
 */
const SCRIPT_NAMES: ReadonlySet<string> = new Set(
  Object.keys((JSON.parse(readFileSync(path.join(DIST_DIR, 'integrity.json'), 'utf8')) as { files: Record<string, string> }).files).filter((name) =>
    /^[a-z0-9.-]+\.(?:c|m)?js$/.test(name),
  ),
);

/**
 * Unversioned URLs change content when Plover's posthog-js is upgraded, so caches revalidate them hourly (the
 * ETag makes that a 304); a URL naming the version never changes.
 */
const CACHE_UNVERSIONED = 'public, max-age=3600';
const CACHE_VERSIONED = 'public, max-age=31536000, immutable';

/** `/static/<name>` and `/static/<version>/<name>` (decide's route table); read from disk once per file. */
export function staticScripts(): SdkRoute[] {
  const cache = new Map<string, Promise<Script>>();

  function load(name: string): Promise<Script> {
    let script = cache.get(name);
    if (!script) {
      script = readFile(path.join(DIST_DIR, name)).then((body) => ({ body, etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"` }));
      // A failed read is not kept: the next request tries again.
      script.catch(() => cache.delete(name));
      cache.set(name, script);
    }
    return script;
  }

  async function serve(req: Request, res: Response, name: string, cacheControl: string): Promise<void> {
    if (!SCRIPT_NAMES.has(name)) throw ApiError.notFound(`No script ${JSON.stringify(name)}.`);
    const { body, etag } = await load(name);
    res.setHeader('Cache-Control', cacheControl);
    res.setHeader('ETag', etag);
    if (req.headers['if-none-match'] === etag) {
      res.status(304).end();
      return;
    }
    res.type('application/javascript; charset=utf-8').send(body);
  }

  const script = { status: 200, type: 'application/javascript' };
  return [
    {
      methods: ['get'],
      path: '/static/:name',
      summary: "One of posthog-js's browser bundles, of the version Plover depends on (`array.js`, `recorder.js`, …).",
      response: script,
      express: (req, res) => serve(req, res, String(req.params.name), CACHE_UNVERSIONED),
    },
    {
      methods: ['get'],
      path: '/static/:version/:name',
      summary: "One of posthog-js's browser bundles by version (`strict_script_versioning`); 404 for another version.",
      response: script,
      express: async (req, res) => {
        if (req.params.version !== VERSION) throw ApiError.notFound(`This server has posthog-js ${VERSION}, not ${JSON.stringify(req.params.version)}.`);
        await serve(req, res, String(req.params.name), CACHE_VERSIONED);
      },
    },
  ];
}
