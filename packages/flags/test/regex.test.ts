import type { JsonValue, Properties } from '@plover/flags';

import { matches } from './fixtures';

/** [why, pattern, property value, regex matches, not_regex matches] */
type Row = [string, string, JsonValue | undefined, boolean, boolean];

const rows: Row[] = [
  ['searches anywhere (not a full match)', '\\d+', 'abc123', true, false],
  ['honours anchors', '^user_\\d+$', 'user_42', true, false],
  ['rejects a non-matching value', '^user_\\d+$', 'admin_42', false, true],
  ['matches the text of a number', '^4', 42, true, false],
  ['is case-sensitive by default', '^chrome', 'Chrome', false, true],
  ['translates a leading (?i) flag', '(?i)^chrome', 'CHROME 120', true, false],
  ['translates combined leading flags', '(?is)^a.b$', 'A\nB', true, false],
  ['translates Python named groups', '(?P<major>\\d+)\\.(?P=major)', '7.7', true, false],
  ['translates \\A and \\z to input boundaries', '\\Aab\\z', 'ab', true, false],
  ['keeps \\A anchored to the input start even with (?m)', '(?m)\\Ab', 'a\nb', false, true],
  ['reads a leading ] in a class as a literal', '[]x]+$', 'a]x]', true, false],
  ['accepts Unicode property classes', '^\\p{Lu}', 'Élan', true, false],
  ['accepts patterns only the lenient syntax allows', '^[\\w-.]+$', 'a-b.c', true, false],
  ['treats an invalid pattern as no match for both operators', '(unclosed', 'anything', false, false],
  ['applies inline flags in mid-pattern, as Rust does', 'a(?i)b', 'aB', true, false],
  ['reads POSIX classes, as Rust does', '^[[:alpha:]]+$', 'abc', true, false],
  ['matches with look-around, which only a backtracking engine has', '^(?=.*@)(?!admin)', 'user@example.com', true, false],
  ['translates Python \\Z, which RE2 lacks', 'b\\Z', 'ab', true, false],
  ['treats the verbose flag as unsupported', '(?x) a b ', 'ab', false, false],
  ['fails regex and passes not_regex for a missing property', '.*', undefined, false, true],
  ['passes not_regex for a missing property even with an invalid pattern', '(unclosed', undefined, false, true],
];

describe('regex / not_regex', () => {
  it.each(rows)('%s', (_why, pattern, value, regex, notRegex) => {
    const properties: Properties = value === undefined ? {} : { prop: value };
    expect(matches({ key: 'prop', type: 'person', operator: 'regex', value: pattern }, properties)).toBe(regex);
    expect(matches({ key: 'prop', type: 'person', operator: 'not_regex', value: pattern }, properties)).toBe(notRegex);
  });
});
