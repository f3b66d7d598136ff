/**
 * Drives a real posthog-js browser build (its `dist/array.full.js`, what the snippet loads) inside a happy-dom
 * window, in a process of its own: `node --import tsx posthog-js-driver.ts <package> <host> <token> <user id>`.
 * Prints one JSON line: the requests posthog-js made to capture routes and the answers it got.
 *
 * The window's fetch is Node's, fed the bytes posthog-js built: happy-dom's own fetch turns a body made in the
 * script's realm (an ArrayBuffer or Blob from another VM context) into the string "[object ArrayBuffer]".
 * Everything else — batching, compression (fflate gzip), body shape, query hints — is posthog-js's own code.
 */
import { readFileSync } from 'node:fs';

interface PostHogJs {
  init(token: string, config: Record<string, unknown>): void;
  capture(event: string, properties?: Record<string, unknown>): void;
  identify(distinctId: string, set?: Record<string, unknown>): void;
}

const [packageName, host, token, userId] = process.argv.slice(2) as [string, string, string, string];
const CAPTURE_PATHS = /^\/(e|i\/v0\/e|batch)\//;
const requests: { url: string; status: number; gzip: boolean; contentType: string | undefined }[] = [];

async function main(): Promise<void> {
  // happy-dom is an ES module; this file compiles to CommonJS.
  const { Window } = await import('happy-dom');
  const window = new Window({
    url: 'https://shop.example/checkout',
    settings: {
      disableJavaScriptFileLoading: true,
      disableCSSFileLoading: true,
      navigator: { userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36' },
    },
  });
  Object.assign(window, {
    fetch: async (url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) => {
      const body = await toBuffer(init.body);
      const response = await fetch(url, { method: init.method, headers: init.headers, body });
      if (CAPTURE_PATHS.test(new URL(url).pathname)) {
        requests.push({
          url: new URL(url).pathname + new URL(url).search,
          status: response.status,
          gzip: body?.[0] === 0x1f && body[1] === 0x8b,
          contentType: init.headers?.['Content-Type'],
        });
      }
      return response;
    },
  });
  window.eval(readFileSync(require.resolve(`${packageName}/dist/array.full.js`), 'utf8'));
  const posthog = (window as unknown as { posthog: PostHogJs }).posthog;
  posthog.init(token, {
    api_host: host,
    autocapture: false,
    capture_pageview: false,
    capture_pageleave: false,
    disable_session_recording: true,
    persistence: 'memory',
    // happy-dom is flagged as a bot by posthog-js's user-agent filter; PostHog documents this switch for tests.
    opt_out_useragent_filter: true,
  });
  for (let i = 0; i < 5; i++) posthog.capture('js-event', { index: i, '$feature/beta': 'variant-b' });
  posthog.identify(userId, { email: 'js@example.com' });
  posthog.capture('after-identify');
  // posthog-js flushes its batch queue every few seconds.
  await new Promise((resolve) => setTimeout(resolve, 8_000));
  process.stdout.write(`${JSON.stringify({ requests })}\n`);
  await window.happyDOM.close();
  process.exit(0);
}

async function toBuffer(body: unknown): Promise<Buffer | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof (body as Blob).arrayBuffer === 'function') return Buffer.from(await (body as Blob).arrayBuffer());
  return Buffer.from(body as ArrayBuffer);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
