/**
 * The channel type of a session by PostHog's rules, case by case: each row gives a session's first-touch values
 * and the channel PostHog's classification gives them (its rules and channel definitions).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChdbClickHouse } from '@plover/chdb';
import { channelTypeSql, type ChannelInputs } from '../src/channel';

type Case = [expected: string, values: Partial<Record<keyof ChannelInputs, string>>];

const CASES: Case[] = [
  ['Direct', { referringDomain: '$direct' }],
  ['Direct', { referringDomain: '$direct', source: '(direct)' }],
  ['Unknown', {}],
  ['Referral', { referringDomain: 'blog.example.org' }],
  ['Organic Search', { referringDomain: 'www.google.com' }],
  ['Organic Search', { referringDomain: 'www.bing.com' }],
  ['Organic Search', { referringDomain: 'duckduckgo.com' }],
  ['Organic Social', { referringDomain: 'l.facebook.com' }],
  ['Organic Social', { referringDomain: 't.co' }],
  ['Organic Social', { referringDomain: 'news.ycombinator.com' }],
  ['Organic Video', { referringDomain: 'www.youtube.com' }],
  ['Organic Shopping', { referringDomain: 'www.amazon.com' }],
  ['Email', { referringDomain: 'mail.google.com' }],
  ['Email', { referringDomain: '$direct', medium: 'email' }],
  ['Email', { source: 'newsletter', medium: 'E-Mail' }],
  ['Organic Social', { source: 'twitter', referringDomain: '$direct' }],
  ['Organic Social', { medium: 'social', referringDomain: '$direct' }],
  ['Paid Search', { source: 'google', medium: 'cpc' }],
  ['Paid Search', { referringDomain: 'www.google.com', gclid: 'abc' }],
  ['Paid Search', { gadSource: '1', referringDomain: '$direct' }],
  ['Paid Social', { source: 'facebook', medium: 'paid_social' }],
  ['Paid Social', { medium: 'cpc', fbclid: 'x' }],
  ['Paid Shopping', { medium: 'ppc', campaign: 'summer-shop' }],
  ['Paid Video', { medium: 'cpv', campaign: 'launch video' }],
  ['Display', { medium: 'cpm' }],
  ['Paid Unknown', { medium: 'retargeting' }],
  ['Paid Unknown', { medium: 'cpc', source: 'null' }],
  ['Cross Network', { campaign: 'cross-network', medium: 'cpc', source: 'google' }],
  // Direct wins over an organic campaign when nothing else is known.
  ['Direct', { campaign: 'shopping-week', referringDomain: '$direct' }],
  ['Organic Shopping', { campaign: 'shopping-week', referringDomain: 'example.com' }],
  ['Organic Video', { campaign: 'video-tour', referringDomain: 'example.com' }],
  ['Push', { medium: 'web-push' }],
  ['Push', { medium: 'notification' }],
  ['Affiliate', { medium: 'affiliate' }],
  ['Referral', { medium: 'link' }],
  ['SMS', { source: 'sms' }],
  ['Organic Social', { fbclid: 'x', referringDomain: '$direct' }],
  ['Referral', { source: 'partner-site', referringDomain: 'partner.example' }],
  ['Unknown', { source: 'partner-site' }],
];

describe('channel type', () => {
  let ch: ChdbClickHouse;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'plover-channel-'));
    ch = await ChdbClickHouse.open({ dataDir: dir });
  });
  afterAll(async () => {
    await ch?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("classifies sessions as PostHog's rules do", async () => {
    const keys: (keyof ChannelInputs)[] = ['source', 'medium', 'campaign', 'referringDomain', 'gclid', 'gadSource', 'fbclid'];
    const got: [string, Case[1]][] = [];
    for (const [, values] of CASES) {
      const inputs = Object.fromEntries(keys.map((key) => [key, `{${key}:String}`])) as unknown as ChannelInputs;
      const params = Object.fromEntries(keys.map((key) => [key, values[key] ?? '']));
      const [row] = await ch.query<{ channel: string }>('test.channel', `SELECT ${channelTypeSql(inputs)} AS channel`, params);
      got.push([row!.channel, values]);
    }
    expect(got).toEqual(CASES);
  });
});
