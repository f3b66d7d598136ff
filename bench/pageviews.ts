/** The events the ingestion benchmarks produce: posthog-js pageviews as capture puts them on the bus. */
import { randomUUID } from 'node:crypto';
import type { OutgoingMessage } from '@plover/bus';
import { capturedEventKey, type CapturedEvent, type CapturedEventMessage } from '@plover/contracts';
import { uuidv7 } from '@plover/core';

const BROWSERS = ['Chrome', 'Safari', 'Firefox', 'Edge'];

/**
 * A posthog-js pageview; every tenth one `$set`s something new on its person. `ip` is the visitor's address (capture's
 * and the `$ip` property); by default everyone comes from one documentation address, which GeoIP does not locate.
 */
export function pageview(teamId: number, i: number, people: number, ip = '203.0.113.9'): { message: OutgoingMessage; uuid: string } {
  const uuid = uuidv7();
  const distinctId = `user-${i % people}`;
  const sessionId = `0190${(i % 977).toString(16).padStart(8, '0')}-session`;
  const properties: Record<string, unknown> = {
    $os: 'Mac OS X',
    $os_version: '14.3.0',
    $browser: BROWSERS[i % BROWSERS.length],
    $browser_version: 122,
    $device_type: 'Desktop',
    $current_url: `https://example.com/products/${i % 500}?utm_source=newsletter`,
    $host: 'example.com',
    $pathname: `/products/${i % 500}`,
    $screen_height: 1117,
    $screen_width: 1728,
    $viewport_height: 992,
    $viewport_width: 1728,
    $lib: 'web',
    $lib_version: '1.232.3',
    $insert_id: randomUUID(),
    $time: Date.now() / 1000,
    distinct_id: distinctId,
    $device_id: randomUUID(),
    $referrer: 'https://www.google.com/',
    $referring_domain: 'www.google.com',
    $session_id: sessionId,
    $window_id: `${sessionId}-w`,
    $pageview_id: randomUUID(),
    token: 'phc_bench',
    $ip: ip,
  };
  if (i % 10 === 0) properties.$set = { last_product_viewed: i % 500, plan: i % 3 === 0 ? 'pro' : 'free' };
  const event: CapturedEvent = { uuid, event: '$pageview', distinct_id: distinctId, properties, timestamp: new Date().toISOString() };
  const envelope: CapturedEventMessage = {
    uuid,
    team_id: teamId,
    distinct_id: distinctId,
    ip,
    now: new Date().toISOString(),
    sent_at: null,
    data: event,
    historical: false,
  };
  return { message: { key: capturedEventKey(teamId, distinctId), value: Buffer.from(JSON.stringify(envelope)) }, uuid };
}
