/**
 * PostHog's channel type of a session (its `channel_type.py` rules over its channel definitions), as ClickHouse
 * SQL over the session's first-touch values. docs/web-analytics.md#channel-type states the rules.
 */
import { MEDIUM_TYPES, SOURCE_GROUPS } from './channel-definitions';

/** SQL expressions of a session's first values (any case; empty or missing as '' or NULL). */
export interface ChannelInputs {
  source: string;
  medium: string;
  campaign: string;
  referringDomain: string;
  gclid: string;
  gadSource: string;
  fbclid: string;
}

const literal = (text: string | null) => (text === null ? 'NULL' : `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`);
const array = (items: readonly (string | number | null)[]) => `[${items.map((item) => (typeof item === 'number' ? String(item) : literal(item))).join(', ')}]`;

const GROUPS = Object.keys(SOURCE_GROUPS) as (keyof typeof SOURCE_GROUPS)[];
const SOURCE_NAMES = GROUPS.flatMap((group) => SOURCE_GROUPS[group]);
const SOURCE_CODES = GROUPS.flatMap((group, index) => SOURCE_GROUPS[group].map(() => index + 1));
const PAID_GROUPS = new Set(['Search', 'Social', 'Shopping', 'Video']);
/** By source code (1-based; 0, unknown, gives NULL). */
const PAID_BY_CODE = array(GROUPS.map((group) => (PAID_GROUPS.has(group) ? `Paid ${group}` : null)));
const ORGANIC_BY_CODE = `CAST(${array(GROUPS.map((group) => (PAID_GROUPS.has(group) ? `Organic ${group}` : group)))} AS Array(Nullable(String)))`;

const SHOPPING_CAMPAIGN = '^(.*(([^a-df-z]|^)shop|shopping).*)$';
const VIDEO_CAMPAIGN = '^(.*video.*)$';

/** Lowercased; '' and 'null' count as missing. */
const normalized = (sql: string) => `nullIf(nullIf(lower(${sql}), ''), 'null')`;

/**
 * The channel type of one session. The rules run inside a one-element `arrayMap`, whose parameters stand for the
 * inputs, so that each input and the long lookup of the source list appear once in the SQL.
 */
export function channelTypeSql(inputs: ChannelInputs): string {
  const lookup = (name: string) => `transform(${name}, ${array(SOURCE_NAMES)}, ${array(SOURCE_CODES)}, 0)`;
  // The source's and the referring domain's group codes: the name as is, else its first significant subdomain.
  const codes = `arrayMap(name -> ${lookup('name')}, [ifNull(ch_source, ''), cutToFirstSignificantSubdomain(ifNull(ch_source, '')),
    ifNull(ch_domain, ''), cutToFirstSignificantSubdomain(ifNull(ch_domain, ''))])`;
  const mediumType = (column: 1 | 2) =>
    `transform(ifNull(ch_medium, ''), ${array(MEDIUM_TYPES.map(([name]) => name))}, ${array(MEDIUM_TYPES.map((row) => row[column]))}, NULL)`;
  const campaignIs = (pattern: string, type: string) => `if(match(ch_campaign, ${literal(pattern)}), ${literal(type)}, NULL)`;
  const paid = `match(ch_medium, '^(cpc|cpm|cpv|cpa|ppc|retargeting)$') OR startsWith(ch_medium, 'paid') OR ch_gclid IS NOT NULL OR ch_gad_source IS NOT NULL`;
  const direct = `ch_domain = '$direct' AND ch_medium IS NULL AND (ch_source IS NULL OR ch_source IN ('(direct)', 'direct', '$direct')) AND ch_fbclid IS NULL`;
  const rules = `multiIf(
    match(ch_campaign, 'cross-network'), 'Cross Network',
    ${paid}, coalesce(
      ${PAID_BY_CODE}[ch_source_code], ${campaignIs(SHOPPING_CAMPAIGN, 'Paid Shopping')}, ${mediumType(1)}, ${PAID_BY_CODE}[ch_domain_code],
      if(ch_gad_source = '1', 'Paid Search', NULL), ${campaignIs(VIDEO_CAMPAIGN, 'Paid Video')}, if(ch_fbclid IS NOT NULL, 'Paid Social', NULL), 'Paid Unknown'),
    ${direct}, 'Direct',
    coalesce(
      ${ORGANIC_BY_CODE}[ch_source_code], ${campaignIs(SHOPPING_CAMPAIGN, 'Organic Shopping')}, ${mediumType(2)}, ${ORGANIC_BY_CODE}[ch_domain_code],
      ${campaignIs(VIDEO_CAMPAIGN, 'Organic Video')}, if(match(ch_medium, 'push$'), 'Push', NULL), if(ch_fbclid IS NOT NULL, 'Organic Social', NULL),
      if(ch_domain = '$direct', 'Direct', NULL), if(ch_domain IS NOT NULL, 'Referral', NULL), 'Unknown'))`;
  const values = [inputs.source, inputs.medium, inputs.campaign, inputs.referringDomain, inputs.gclid, inputs.gadSource, inputs.fbclid].map(normalized);
  return `arrayMap((ch_source, ch_medium, ch_campaign, ch_domain, ch_gclid, ch_gad_source, ch_fbclid) ->
    arrayMap(ch_codes -> arrayMap((ch_source_code, ch_domain_code) -> ${rules},
      [if(ch_codes[1] != 0, ch_codes[1], ch_codes[2])], [if(ch_codes[3] != 0, ch_codes[3], ch_codes[4])])[1], [${codes}])[1],
    ${values.map((value) => `[${value}]`).join(', ')})[1]`;
}
