import { clickHouseText } from '../src/rows';

describe('clickHouseText', () => {
  it.each([
    ['plain', 'plain'],
    ['a\u0000b', 'a\ufffdb'],
    ['x\ud800', 'x\ufffd'],
    ['\udc00y', '\ufffdy'],
    ['pair \ud83d\ude00 kept', 'pair \ud83d\ude00 kept'],
  ])('%j is stored as %j', (text, stored) => {
    expect(clickHouseText(text)).toBe(stored);
  });
});
