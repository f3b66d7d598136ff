/**
 * Action matching: the one SQL condition (actionCondition) run in chDB over autocapture events whose
 * `elements_chain` strings have posthog-js's shape (quotes escaped, inline styles holding `;`, Tailwind classes,
 * a span clicked inside a button), checked against a table of what PostHog matches and against the TypeScript
 * reference on random steps.
 */
import { insertEvents } from '@plover/clickhouse';
import fc from 'fast-check';
import { actionCondition, parseSelector, selectorRegex } from '../src/actions';
import type { ActionDefinition, ActionStep } from '../src/types';
import { Params } from '../src/params';
import { eventRow } from './support/event-row';
import { chainHref, chainTexts, referenceMatches, type ReferenceEvent } from './support/action-reference';
import { useScratchClickHouse } from './support/scratch-clickhouse';
import { CHAINS } from './support/chains';
import { noActions } from './support/context';

const clickhouse = useScratchClickHouse('plover-actions-');

type ChainName = keyof typeof CHAINS;
const NAMES = Object.keys(CHAINS) as ChainName[];

let nextProject = 1;
let uuidCounter = 0;

interface Stored extends ReferenceEvent {
  uuid: string;
}

async function store(events: ReferenceEvent[]): Promise<{ projectId: number; stored: Stored[] }> {
  const projectId = nextProject++;
  const stored = events.map((event) => ({ ...event, uuid: `00000000-0000-7000-8000-${(++uuidCounter).toString(16).padStart(12, '0')}` }));
  await insertEvents(
    clickhouse(),
    stored.map((event) => ({
      ...eventRow({
        uuid: event.uuid,
        projectId,
        event: event.event,
        at: '2025-01-01 00:00:00.000',
        person: '00000000-0000-4000-8000-00000000000a',
        properties: event.currentUrl === undefined ? {} : { $current_url: event.currentUrl },
      }),
      elements_chain: event.elementsChain,
    })),
  );
  return { projectId, stored };
}

/** The uuids the SQL condition picks out of a project. */
async function matched(projectId: number, action: ActionDefinition): Promise<Set<string>> {
  const params = new Params();
  const condition = await actionCondition(action, params, {
    personId: 'person_id',
    ctx: { projectId, timezone: 'UTC', now: new Date(), cohortMembers: () => Promise.resolve([]), action: noActions },
  });
  const rows = await clickhouse().query<{ uuid: string }>(
    'test.action',
    `SELECT toString(uuid) AS uuid FROM events WHERE team_id = {projectId:Int64} AND ${condition}`,
    { ...params.values, projectId },
  );
  return new Set(rows.map((row) => row.uuid));
}

const autocaptures: ReferenceEvent[] = NAMES.map((name) => ({
  event: '$autocapture',
  elementsChain: CHAINS[name],
  currentUrl: 'https://app.example.com/signup',
}));

describe('the extractions PostHog materializes', () => {
  it('reads the first href and the distinct texts, a text cut at an escaped quote', () => {
    expect(chainHref(CHAINS.externalLink)).toBe('https://posthog.com/docs?x=1&y=2');
    expect(chainHref(CHAINS.signupButton)).toBe('');
    expect(chainTexts(CHAINS.spanInButton)).toEqual(['Buy now']);
    // `(.*?)"` stops at the first quote, escaped or not: PostHog's column holds `Say \`.
    expect(chainTexts(CHAINS.quotedText)).toEqual(['Say \\']);
  });
});

describe('selectors', () => {
  it('parses a selector target-first with its classes, id, attributes and nth-child', () => {
    expect(parseSelector('form#signup > button[type="submit"]')).toEqual([
      { directChild: false, tag: 'button', classes: [], attributes: [['type', 'submit']] },
      { directChild: true, tag: 'form', classes: [], attributes: [['attr_id', 'signup']] },
    ]);
    expect(parseSelector('button.btn:nth-child(2)')).toEqual([{ directChild: false, tag: 'button', classes: ['btn'], attributes: [['nth-child', '2']] }]);
    // As in PostHog, only the letters right before an attribute's `[` stay as the tag: the class is read as one.
    expect(parseSelector('button.btn[type="submit"]')).toEqual([{ directChild: false, tag: 'btn', classes: [], attributes: [['type', 'submit']] }]);
    expect(parseSelector('div.shadow-[0_4px_rgba(0,0,0,0.1)].text-blue')).toEqual([
      { directChild: false, tag: 'div', classes: ['shadow-[0_4px_rgba(0,0,0,0.1)]', 'text-blue'], attributes: [] },
    ]);
  });

  /** selector → the chains PostHog's regex matches, reasoned from its build_selector_regex. */
  const TABLE: [string, ChainName[]][] = [
    ['button', ['signupButton', 'quotedText', 'spanInButton']],
    ['a', ['pricingLink', 'externalLink']],
    ['#signup-btn', ['signupButton']],
    ['#signup', ['signupButton']],
    ['.btn-primary', ['signupButton']],
    ['button.btn.btn-primary', ['signupButton']],
    ['button.primary', []],
    ['form button', ['signupButton']],
    ['form > button', ['signupButton']],
    // PostHog's regex joins a part to its ancestor at the next element boundary (or a space): a grandparent in
    // the selector does not match through the form in between.
    ['div.container button', []],
    ['button span', ['spanInButton']],
    ['[data-attr="buy"]', ['spanInButton']],
    // A part without a tag starts with `.*?`, which runs across elements.
    ['[data-attr="buy"] span', ['spanInButton']],
    ['[data-attr="greeting"] span', []],
    ['span', ['spanInButton']],
    ['.w-1/2', ['spanInButton']],
    ['li a', ['pricingLink']],
    ['a.external', ['externalLink']],
    ['div.card', ['inlineStyle']],
    // Attributes are looked for with `.*?` too: any later element's nth-child="2" (here the body's) counts.
    ['button:nth-child(2)', ['signupButton', 'quotedText', 'spanInButton']],
    ['button:nth-child(3)', []],
    ['input', []],
  ];

  it.each(TABLE)('%s', async (selector, expected) => {
    const { projectId, stored } = await store(autocaptures);
    const action: ActionDefinition = { id: 1, name: 'a', steps: [{ event: '$autocapture', selector }] };
    const want = new Set(stored.filter((_, index) => expected.includes(NAMES[index] as ChainName)).map((event) => event.uuid));
    expect(await matched(projectId, action)).toEqual(want);
    expect(new Set(stored.filter((event) => referenceMatches(action, event)).map((event) => event.uuid))).toEqual(want);
    expect(selectorRegex(selector).startsWith('(^|;)')).toBe(true);
  });
});

describe('steps', () => {
  const cases: [string, ActionStep[], (event: Stored) => boolean][] = [
    ['tag_name', [{ event: '$autocapture', tag_name: 'a' }], (e) => e.elementsChain.startsWith('a') || e.elementsChain.includes(';a')],
    ['text exact', [{ event: '$autocapture', text: 'Pricing' }], (e) => e.elementsChain === CHAINS.pricingLink],
    ['text contains is case-insensitive', [{ event: '$autocapture', text: 'buy', text_matching: 'contains' }], (e) => e.elementsChain === CHAINS.spanInButton],
    [
      'text regex',
      [{ event: '$autocapture', text: '^(Docs|Card)$', text_matching: 'regex' }],
      (e) => [CHAINS.externalLink, CHAINS.inlineStyle].includes(e.elementsChain as never),
    ],
    ['href exact', [{ event: '$autocapture', href: '/pricing' }], (e) => e.elementsChain === CHAINS.pricingLink],
    ['href contains', [{ event: '$autocapture', href: 'POSTHOG.com', href_matching: 'contains' }], (e) => e.elementsChain === CHAINS.externalLink],
    ['element conditions only on $autocapture', [{ event: '$pageview', text: 'Pricing' }], (e) => e.event === '$pageview'],
    ['url contains is case-sensitive', [{ url: '/Signup' }], () => false],
    ['url contains', [{ url: '/signup' }], (e) => e.currentUrl?.includes('/signup') === true],
    [
      'url exact',
      [{ event: '$pageview', url: 'https://app.example.com/pricing', url_matching: 'exact' }],
      (e) => e.event === '$pageview' && e.currentUrl === 'https://app.example.com/pricing',
    ],
    ['url regex never matches a missing url', [{ url: '^$|pricing', url_matching: 'regex' }], (e) => e.currentUrl?.includes('pricing') === true],
    [
      'steps are OR-ed',
      [{ event: '$pageview' }, { event: '$autocapture', href: '/pricing' }],
      (e) => e.event === '$pageview' || e.elementsChain === CHAINS.pricingLink,
    ],
    ['a step ANDs its conditions', [{ event: '$autocapture', selector: 'button', text: 'Buy now' }], (e) => e.elementsChain === CHAINS.spanInButton],
    ['no steps: every event', [], () => true],
  ];
  const events: ReferenceEvent[] = [
    ...autocaptures,
    { event: '$pageview', elementsChain: '', currentUrl: 'https://app.example.com/pricing' },
    { event: '$pageview', elementsChain: '' },
  ];

  it.each(cases)('%s', async (_name, steps, expected) => {
    const { projectId, stored } = await store(events);
    const action: ActionDefinition = { id: 1, name: 'a', steps };
    const want = new Set(stored.filter(expected).map((event) => event.uuid));
    expect(await matched(projectId, action)).toEqual(want);
    expect(new Set(stored.filter((event) => referenceMatches(action, event)).map((event) => event.uuid))).toEqual(want);
  });
});

describe('random steps against the reference', () => {
  const pieces = {
    event: fc.constantFrom(undefined, '$autocapture', '$pageview'),
    selector: fc.constantFrom(undefined, 'button', 'a', 'form button', 'button span', '.btn', '#signup', 'div.card', '[data-attr="greeting"]', 'li > a'),
    tag_name: fc.constantFrom(undefined, 'a', 'button', 'div', 'span'),
    text: fc.constantFrom(undefined, 'Pricing', 'pricing', 'o', 'Say', '^C', 'a_d'),
    href: fc.constantFrom(undefined, '/pricing', 'posthog', 'docs?x=1', '%', '^/'),
    url: fc.constantFrom(undefined, 'signup', 'pricing', 'https://app.example.com/pricing', '.*', 'Sign'),
    matching: fc.constantFrom(undefined, 'exact', 'contains', 'regex'),
  } as const;
  const stepArb: fc.Arbitrary<ActionStep> = fc
    .record({
      event: pieces.event,
      selector: pieces.selector,
      tag_name: pieces.tag_name,
      text: pieces.text,
      text_matching: pieces.matching,
      href: pieces.href,
      href_matching: pieces.matching,
      url: pieces.url,
      url_matching: pieces.matching,
    })
    .map((step) => Object.fromEntries(Object.entries(step).filter(([, value]) => value !== undefined)) as ActionStep);

  it('the SQL condition picks what the reference picks', async () => {
    const urls = [undefined, 'https://app.example.com/signup', 'https://app.example.com/pricing', 'https://APP.example.com/Signup?a_d=1'];
    const events: ReferenceEvent[] = NAMES.flatMap((name, index) => [
      { event: '$autocapture', elementsChain: CHAINS[name], currentUrl: urls[index % urls.length] },
      { event: '$pageview', elementsChain: '', currentUrl: urls[(index + 1) % urls.length] },
    ]);
    const { projectId, stored } = await store(events);
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 3 }), async (steps) => {
        const action: ActionDefinition = { id: 1, name: 'a', steps };
        const want = new Set(stored.filter((event) => referenceMatches(action, event)).map((event) => event.uuid));
        expect(await matched(projectId, action)).toEqual(want);
      }),
      { numRuns: 60, seed: 3201 },
    );
  });
});
