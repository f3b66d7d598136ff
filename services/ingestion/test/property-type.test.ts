import { detectPropertyType } from '../src/definitions/property-type';

const NOW_S = Date.UTC(2025, 0, 10) / 1000;

describe('detectPropertyType', () => {
  it.each([
    // PostHog's own examples (property-defs-rs tests and docs)
    ['price', 9.5, 'Numeric'],
    ['price', '9.5', 'String'],
    ['signup_date', '2025-01-02', 'DateTime'],
    ['created_at', 1735689600, 'DateTime'],
    ['ts', 5, 'Numeric'],
    ['utm_id', 123, 'String'],
    ['beta', 'true', 'Boolean'],
    ['beta', ' FALSE ', 'Boolean'],
    ['beta', 'True', 'String'],
    ['enabled', true, 'Boolean'],
    ['$feature/new-onboarding', true, 'String'],
    ['$feature_flag_response', false, 'String'],
    ['$survey_response_2', 4, 'String'],
    ['UTM_source', 1, 'String'],
  ] as const)('%s = %j → %s', (key, value, expected) => {
    expect(detectPropertyType(key, value, NOW_S)).toBe(expected);
  });

  describe('date-times', () => {
    it.each(['2025-01-02', '2025/01/02', '02-01-2025', '02/01/2025', '2025-01-02 10:11:12', '2025-01-02T10:11:12.345Z', '2025-01-02T10:11:12+01:00'])(
      'a value like %s is a DateTime under any key',
      (value) => {
        expect(detectPropertyType('anything', value, NOW_S)).toBe('DateTime');
      },
    );

    it('reads RFC 2822 dates', () => {
      expect(detectPropertyType('sent', 'Tue, 1 Jul 2003 10:52:37 +0200', NOW_S)).toBe('DateTime');
      expect(detectPropertyType('sent', '1 Jul 2003 10:52 GMT', NOW_S)).toBe('DateTime');
    });

    it('does not take other text for a date', () => {
      expect(detectPropertyType('anything', '2025-13-45x', NOW_S)).toBe('String');
      expect(detectPropertyType('anything', '2025-01-02T10:11', NOW_S)).toBe('String');
      expect(detectPropertyType('anything', 'yesterday', NOW_S)).toBe('String');
    });

    it('takes a number for a Unix time only under a time-like key, and only from six months ago on', () => {
      const sixMonths = 15_768_000;
      expect(detectPropertyType('updatedAt', NOW_S - sixMonths, NOW_S)).toBe('DateTime');
      expect(detectPropertyType('updatedAt', NOW_S - sixMonths - 1, NOW_S)).toBe('Numeric');
      expect(detectPropertyType('event-at', NOW_S + 86_400, NOW_S)).toBe('DateTime');
      expect(detectPropertyType('count', NOW_S, NOW_S)).toBe('Numeric');
    });

    it('takes a fraction or a negative number under a time-like key for a number (PostHog reads an unsigned integer)', () => {
      expect(detectPropertyType('timestamp', NOW_S + 0.5, NOW_S)).toBe('Numeric');
      expect(detectPropertyType('timestamp', -1, NOW_S)).toBe('Numeric');
    });

    it('keeps a time-like key with a value that is no date to the value rules', () => {
      expect(detectPropertyType('date', 'soon', NOW_S)).toBe('String');
      expect(detectPropertyType('start_time', 'true', NOW_S)).toBe('Boolean');
    });
  });

  it.each([null, [1, 2], { a: 1 }, undefined])('gives %j no type', (value) => {
    expect(detectPropertyType('x', value, NOW_S)).toBeNull();
  });
});
