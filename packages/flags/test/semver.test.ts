import type { JsonValue, PropertyOperator } from '@plover/flags';

import { matches } from './fixtures';

type Row = [string, JsonValue, JsonValue, boolean];

function table(operator: PropertyOperator, rows: Row[]): void {
  describe(operator, () => {
    it.each(rows)('%s (filter %j, property %j)', (_why, filter, property, expected) => {
      expect(matches({ key: 'app_version', type: 'person', operator, value: filter }, { app_version: property })).toBe(expected);
    });
  });
}

describe('semver operators', () => {
  table('semver_eq', [
    ['matches the same version', '1.2.3', '1.2.3', true],
    ['strips one leading v', '1.2.3', 'v1.2.3', true],
    ['pads missing parts', '3.10.0', '3.10', true],
    ['drops leading zeros of core parts', '3.8.0', '3.08', true],
    ['reads a number property', '3.0.0', 3, true],
    ['distinguishes pre-releases', '1.2.3', '1.2.3-beta', false],
    ['compares build metadata like the semver crate', '1.0.0', '1.0.0+build.1', false],
    ['rejects an unparseable property', '1.2.3', 'latest', false],
    ['rejects more than three core parts', '1.2.3', '1.2.3.4', false],
    ['rejects an unparseable filter', 'latest', '1.2.3', false],
  ]);

  table('semver_neq', [
    ['matches a different version', '1.2.3', '1.2.4', true],
    ['rejects the same version', '1.2.3', '1.2.3', false],
    ['still fails for an unparseable property', '1.2.3', 'garbage', false],
  ]);

  table('semver_gt', [
    ['compares numerically, not lexically', '1.9.0', '1.10.0', true],
    ['orders a release after its pre-release', '1.0.0-rc.1', '1.0.0', true],
    ['orders numeric pre-release identifiers numerically', '1.0.0-alpha.2', '1.0.0-alpha.10', true],
    ['orders numeric identifiers before alphanumeric ones', '1.0.0-alpha.beta', '1.0.0-alpha.1', false],
    ['compares versions beyond 2^53 exactly', '1.0.9007199254740993', '1.0.9007199254740994', true],
  ]);

  table('semver_gte', [
    ['includes equality', '2.0.0', '2.0', true],
    ['rejects an older version', '2.0.0', '1.99.99', false],
  ]);

  table('semver_lt', [
    ['orders a pre-release before its release', '1.0.0', '1.0.0-alpha', true],
    ['rejects a newer version', '1.0.0', '1.0.1', false],
  ]);

  table('semver_lte', [
    ['includes equality', '1.2.3', '1.2.3', true],
    ['rejects a newer version', '1.2.3', '1.3.0', false],
  ]);

  table('semver_tilde', [
    ['accepts patch updates', '1.2.3', '1.2.9', true],
    ['includes the lower bound', '1.2.3', '1.2.3', true],
    ['rejects the next minor', '1.2.3', '1.3.0', false],
    ['rejects older patches', '1.2.3', '1.2.2', false],
    ['pads a short filter', '1.2', '1.2.0', true],
    ['rejects pre-releases of other patches', '1.2.3', '1.2.4-beta', false],
    ['accepts pre-releases of the same patch when the filter has one', '1.2.3-alpha', '1.2.3-beta', true],
  ]);

  table('semver_caret', [
    ['accepts minor updates above 1.0', '1.2.3', '1.9.0', true],
    ['rejects the next major', '1.2.3', '2.0.0', false],
    ['pins the minor in 0.x', '0.2.3', '0.3.0', false],
    ['accepts patch updates in 0.x', '0.2.3', '0.2.9', true],
    ['pins the patch in 0.0.x', '0.0.3', '0.0.4', false],
    ['includes 0.0.x itself', '0.0.3', '0.0.3', true],
  ]);

  table('semver_wildcard', [
    ['1.* spans the major', '1.*', '1.99.0', true],
    ['1.* stops at the next major', '1.*', '2.0.0', false],
    ['1.2.* spans the minor', '1.2.*', '1.2.7', true],
    ['1.2.* stops at the next minor', '1.2.*', '1.3.0', false],
    ['1.*.* is 1.*', '1.*.*', '1.4.2', true],
    ['x works like *', '1.x', '1.0.1', true],
    ['* matches any release', '*', '42.0.0', true],
    ['never matches a pre-release', '1.*', '1.5.0-beta', false],
    ['a wildcard followed by a number is invalid', '1.*.3', '1.0.3', false],
    ['a bare version is a caret requirement', '1.2', '1.9.0', true],
    ['a bare 0.x version pins the minor', '0.2', '0.3.0', false],
  ]);
});
