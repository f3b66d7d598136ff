/**
 * The functions a HogQL query may call: everything else is refused before any SQL is printed. The lists hold
 * ClickHouse functions that compute on their arguments only: nothing that reads a table, a dictionary, a file,
 * the network, the server's settings or its identity (joinGet, dictGet, file, url, getSetting, currentUser, …).
 * A HogQL name maps to the ClickHouse name it prints as; most are the same.
 */

const SCALAR = `
plus minus multiply divide intDiv intDivOrZero modulo moduloOrZero negate abs gcd lcm
equals notEquals less greater lessOrEquals greaterOrEquals and or not xor if multiIf ifNull nullIf coalesce isNull isNotNull
assumeNotNull toNullable isNaN isFinite isInfinite ifNotFinite greatest least
exp log ln exp2 log2 exp10 log10 sqrt cbrt pow power sign sin cos tan asin acos atan atan2 floor ceil round roundBankers
truncate trunc roundToExp2 roundDuration roundAge
toInt8 toInt16 toInt32 toInt64 toInt128 toInt256 toUInt8 toUInt16 toUInt32 toUInt64 toFloat32 toFloat64
toInt64OrNull toInt64OrZero toInt32OrNull toFloat64OrNull toFloat64OrZero toUInt64OrNull toDecimal64 toDecimal32
toString toFixedString toStringCutToZero toDate toDate32 toDateOrNull toDateTime toDateTime64 toDateTimeOrNull
toDateTime64OrNull toUUID toUUIDOrNull toBool toTypeName reinterpretAsString parseDateTimeBestEffort
parseDateTimeBestEffortOrNull parseDateTime64BestEffort parseDateTime64BestEffortOrNull parseDateTime
parseDateTimeOrNull toUnixTimestamp toUnixTimestamp64Milli fromUnixTimestamp fromUnixTimestamp64Milli
toTimeZone timeZoneOf toYear toQuarter toMonth toDayOfYear toDayOfMonth toDayOfWeek toHour toMinute toSecond
toStartOfYear toStartOfQuarter toStartOfMonth toStartOfWeek toMonday toStartOfDay toStartOfHour
toStartOfMinute toStartOfFiveMinutes toStartOfTenMinutes toStartOfFifteenMinutes toStartOfInterval toYYYYMM
toYYYYMMDD toYYYYMMDDhhmmss toISOWeek toISOYear toWeek toYearWeek toRelativeDayNum toRelativeHourNum
toRelativeWeekNum toRelativeMonthNum dateDiff date_diff dateAdd date_add dateSub date_sub dateTrunc date_trunc
addSeconds addMinutes addHours addDays addWeeks addMonths addQuarters addYears subtractSeconds subtractMinutes
subtractHours subtractDays subtractWeeks subtractMonths subtractQuarters subtractYears now now64 today yesterday
timeSlot formatDateTime formatReadableSize formatReadableQuantity formatReadableTimeDelta makeDate makeDateTime
toIntervalSecond toIntervalMinute toIntervalHour toIntervalDay toIntervalWeek toIntervalMonth toIntervalQuarter
toIntervalYear
empty notEmpty length lengthUTF8 lower upper lowerUTF8 upperUTF8 reverse reverseUTF8 concat concatWithSeparator
substring substr substringUTF8 left right leftPad rightPad appendTrailingCharIfAbsent startsWith endsWith trim
trimLeft trimRight trimBoth position positionCaseInsensitive positionUTF8 locate like ilike notLike notILike match
multiMatchAny multiSearchAny extract extractAll extractAllGroups replace replaceOne replaceAll replaceRegexpOne
replaceRegexpAll splitByChar splitByString splitByRegexp splitByWhitespace arrayStringConcat base64Encode
base64Decode tryBase64Decode hex unhex lowerCaseFirst upperCaseFirst repeat format leftUTF8 rightUTF8 normalizeUTF8NFC
encodeURLComponent decodeURLComponent domain domainWithoutWWW topLevelDomain protocol path pathFull queryString
fragment extractURLParameter extractURLParameters extractURLParameterNames cutQueryString cutFragment
cutURLParameter cutWWW firstSignificantSubdomain
JSONExtract JSONExtractString JSONExtractInt JSONExtractUInt JSONExtractFloat JSONExtractBool JSONExtractRaw
JSONExtractArrayRaw JSONExtractKeys JSONExtractKeysAndValues JSONHas JSONLength JSONType isValidJSON
JSONArrayLength toJSONString
array arrayConcat arrayElement has hasAll hasAny indexOf countEqual arrayEnumerate arrayEnumerateUniq arrayPopBack
arrayPopFront arrayPushBack arrayPushFront arraySlice arraySort arrayReverseSort arrayUniq arrayDistinct arrayJoin
arrayMap arrayFilter arrayExists arrayAll arrayFirst arrayLast arrayFirstIndex arrayLastIndex arraySum arrayMin
arrayMax arrayAvg arrayCount arrayReverse arrayFlatten arrayCompact arrayZip arrayReduce arrayIntersect
arrayCumSum arrayDifference arrayStringConcat arrayFold arrayProduct arrayPartialSort range emptyArrayString
emptyArrayInt64 splitByChar arrayShuffle arrayElementOrNull
tuple tupleElement untuple map mapKeys mapValues mapContains
cityHash64 sipHash64 sipHash128 xxHash32 xxHash64 murmurHash2_64 murmurHash3_64 MD5 SHA1 SHA256 farmHash64
generateUUIDv4 rand rand64 randCanonical
bitAnd bitOr bitXor bitNot bitShiftLeft bitShiftRight
IPv4NumToString IPv4StringToNum isIPv4String isIPv6String toIPv4 toIPv6 geoDistance greatCircleDistance
transform bar runningDifference identity
`;

const AGGREGATE = `
count countDistinct min max sum avg any anyLast anyHeavy argMin argMax uniq uniqExact uniqHLL12 uniqCombined
uniqCombined64 uniqUpTo uniqTheta median medianExact quantile quantiles quantileExact quantileTiming
quantileDeterministic quantilesExact stddevPop stddevSamp varPop varSamp covarPop covarSamp corr groupArray
groupUniqArray groupArraySample groupArrayMovingSum groupArrayMovingAvg groupBitAnd groupBitOr groupBitXor topK
topKWeighted sumMap minMap maxMap avgWeighted simpleLinearRegression windowFunnel retention sequenceMatch
sequenceCount histogram skewPop kurtPop entropy first_value last_value nth_value
`;

/** Window-only functions; lag and lead print as ClickHouse's frame-respecting forms. */
const WINDOW_ONLY = 'row_number rank dense_rank percent_rank cume_dist ntile lagInFrame leadInFrame';

const RENAMED: ReadonlyMap<string, string> = new Map([
  ['lag', 'lagInFrame'],
  ['lead', 'leadInFrame'],
  ['COUNT', 'count'],
  ['SUM', 'sum'],
  ['AVG', 'avg'],
  ['MIN', 'min'],
  ['MAX', 'max'],
]);

function words(list: string): ReadonlySet<string> {
  return new Set(list.split(/\s+/).filter((word) => word !== ''));
}

const SCALARS = words(SCALAR);
const AGGREGATES = words(AGGREGATE);
const WINDOW_FUNCTIONS = words(WINDOW_ONLY);

export type FunctionKind = 'scalar' | 'aggregate' | 'window';

export interface ResolvedFunction {
  /** The ClickHouse name to print. */
  name: string;
  kind: FunctionKind;
}

/**
 * The function `name` (as written in HogQL) resolves to, or undefined when it is not allowed. Aggregates take the
 * `If` combinator (`countIf`, `uniqIf`, …); window functions are allowed only where `window` is true (an OVER).
 */
export function resolveFunction(name: string, window = false): ResolvedFunction | undefined {
  const mapped = RENAMED.get(name) ?? name;
  if (SCALARS.has(mapped)) return { name: mapped, kind: 'scalar' };
  if (AGGREGATES.has(mapped)) return { name: mapped, kind: 'aggregate' };
  if (mapped.endsWith('If') && AGGREGATES.has(mapped.slice(0, -2))) return { name: mapped, kind: 'aggregate' };
  if (window && WINDOW_FUNCTIONS.has(mapped)) return { name: mapped, kind: 'window' };
  return undefined;
}

/** Whether a call of `name` (as written) aggregates, for queries that group by their other columns. */
export function isAggregate(name: string): boolean {
  return resolveFunction(name)?.kind === 'aggregate';
}

/** The allowed function closest in spelling to `name`, for "Perhaps you meant …" in the error. */
export function closestFunction(name: string): string | undefined {
  const lower = name.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const candidate of [...SCALARS, ...AGGREGATES]) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance <= 2 && (!best || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
