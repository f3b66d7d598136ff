import { elementsChainOf } from '../src/elements';
import { normalizeProperties } from '../src/normalize';

describe('event normalization (docs/ingestion.md#event-normalization)', () => {
  describe('auto person properties', () => {
    it('copies browser and campaign properties to $set and, as $initial_*, to $set_once', () => {
      const { properties } = normalizeProperties('$pageview', { $browser: 'Chrome', utm_source: 'news', plan: 'pro' }, null);
      expect(properties).toEqual({
        $browser: 'Chrome',
        utm_source: 'news',
        plan: 'pro',
        $set: { $browser: 'Chrome', utm_source: 'news' },
        $set_once: { $initial_browser: 'Chrome', $initial_utm_source: 'news' },
      });
    });

    it("lets the event's own $set and $set_once win a clash", () => {
      const { properties } = normalizeProperties(
        '$pageview',
        { $browser: 'Chrome', $set: { $browser: 'Mine' }, $set_once: { $initial_browser: 'First' } },
        null,
      );
      expect(properties.$set).toEqual({ $browser: 'Mine' });
      expect(properties.$set_once).toEqual({ $initial_browser: 'First' });
    });

    it('writes null values to $set but not to $set_once', () => {
      const { properties } = normalizeProperties('$pageview', { $referrer: null }, null);
      expect(properties).toMatchObject({ $set: { $referrer: null }, $set_once: {} });
    });

    it('uses $os_name where $os is missing, without copying $os_name itself', () => {
      const { properties } = normalizeProperties('$pageview', { $os_name: 'iOS' }, null);
      expect(properties).toEqual({ $os_name: 'iOS', $os: 'iOS', $set: { $os: 'iOS' }, $set_once: { $initial_os: 'iOS' } });
    });

    it('skips the OS of server-side events', () => {
      const { properties } = normalizeProperties('signed up', { $is_server: true, $os: 'Linux', $os_version: '6.1', $browser: 'curl' }, null);
      expect(properties).toMatchObject({ $set: { $browser: 'curl' }, $set_once: { $initial_browser: 'curl' } });
    });

    it('leaves $snapshot and $performance_event alone', () => {
      expect(normalizeProperties('$snapshot', { $browser: 'Chrome' }, null).properties).toEqual({ $browser: 'Chrome' });
    });

    it('keeps a property named __proto__ a plain key', () => {
      const userSet = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
      const { properties } = normalizeProperties('$pageview', { $browser: 'Chrome', $set: userSet }, null);
      const set = properties.$set as Record<string, unknown>;
      expect(Object.getPrototypeOf(set)).toBe(Object.prototype);
      expect(Object.keys(set)).toEqual(['$browser', '__proto__']);
    });
  });

  describe('$process_person_profile', () => {
    it('false: drops $set, $set_once and $unset and keeps the flag', () => {
      const normalized = normalizeProperties('$pageview', { $process_person_profile: false, $browser: 'Chrome', $set: { a: 1 }, $unset: ['b'] }, null);
      expect(normalized).toEqual({ properties: { $process_person_profile: false, $browser: 'Chrome' }, personless: true, elementsChain: '' });
    });

    it.each([true, 'false', null])('%p: the flag is removed and the person processed (only the boolean false counts)', (value) => {
      const normalized = normalizeProperties('$pageview', { $process_person_profile: value, $set: { a: 1 } }, null);
      expect(normalized).toEqual({ properties: { $set: { a: 1 } }, personless: false, elementsChain: '' });
    });
  });

  it.each(['$groupidentify', '$group_identify'])('%s never carries person updates', (name) => {
    const { properties } = normalizeProperties(name, { $group_type: 'company', $group_key: 'acme', $set: { a: 1 }, $set_once: { b: 2 }, $unset: ['c'] }, null);
    expect(properties).toEqual({ $group_type: 'company', $group_key: 'acme' });
  });

  it('stores sent_at as $sent_at', () => {
    expect(normalizeProperties('x', {}, '2024-05-01T12:00:00.000Z').properties).toEqual({ $sent_at: '2024-05-01T12:00:00.000Z' });
  });

  it('does not change the captured properties', () => {
    const captured = { $browser: 'Chrome', $elements_chain: 'a:nth-child="1"' };
    normalizeProperties('$autocapture', captured, null);
    expect(captured).toEqual({ $browser: 'Chrome', $elements_chain: 'a:nth-child="1"' });
  });
});

describe('elements_chain', () => {
  it("takes the SDK's $elements_chain as is and removes it from the properties", () => {
    const normalized = normalizeProperties('$autocapture', { $elements_chain: 'button:text="Buy"', $elements: [{ tag_name: 'a' }] }, null);
    expect(normalized.elementsChain).toBe('button:text="Buy"');
    expect(normalized.properties).toEqual({});
  });

  it('builds the chain from $elements as PostHog does: sorted classes, sorted attributes, escaped quotes', () => {
    const chain = elementsChainOf({
      $elements: [
        { tag_name: 'span', $el_text: 'Say "hi"', attr__class: ['b', 'a'], nth_child: 2, nth_of_type: 1, attr__id: 'greeting' },
        { tag_name: 'div', nth_child: 1, nth_of_type: 1, attr__style: 'color: red' },
      ],
    });
    expect(chain).toBe(
      'span.a.b:attr__class="a,b"attr__id="greeting"attr_id="greeting"nth-child="2"nth-of-type="1"text="Say \\"hi\\""' +
        ';div:attr__style="color: red"nth-child="1"nth-of-type="1"',
    );
  });

  it('defaults nth-child and nth-of-type to 0 and ignores entries that are not objects', () => {
    expect(elementsChainOf({ $elements: [{ tag_name: 'a' }, null, 'x'] })).toBe('a:nth-child="0"nth-of-type="0"');
  });

  it('is empty without elements', () => {
    expect(elementsChainOf({})).toBe('');
  });
});
