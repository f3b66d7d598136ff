/**
 * The `elements_chain` column of autocaptured events (PostHog's `posthog/models/event/sql.py`): the SDK's `$elements_chain` string as is
 * (posthog-js ≥ 1.100 sends it), else the chain PostHog builds from the older `$elements` array
 * (plugin-server utils/db/elements-chain.ts `extractElements` + `elementsToString`), so actions and the
 * toolbar match elements the same way for both SDK generations.
 */

/** Element fields as posthog-js sends them in `$elements`: `tag_name`, `$el_text`, `attr__*`, `nth_child`, ... */
type RawElement = Record<string, unknown>;

/** PostHog cuts these when extracting elements. */
const MAX_TEXT_CHARS = 400;
const MAX_HREF_CHARS = 2048;

export function elementsChainOf(properties: Record<string, unknown>): string {
  const chain = properties.$elements_chain;
  if (typeof chain === 'string' && chain !== '') return chain;
  const elements = properties.$elements;
  if (!Array.isArray(elements)) return '';
  return elements
    .filter((element): element is RawElement => typeof element === 'object' && element !== null && !Array.isArray(element))
    .map(elementToString)
    .join(';');
}

/** `tag.class1.class2:attr="value"…` with attributes sorted by name and quotes escaped. */
function elementToString(element: RawElement): string {
  let text = typeof element.tag_name === 'string' ? element.tag_name : '';
  // Sorted so that the same element always gives the same chain, whatever order the browser listed classes in.
  const classes = classesOf(element).sort();
  for (const className of classes) text += `.${className.replace(/"/g, '')}`;

  const attributes = new Map<string, unknown>();
  const elementText = typeof element.$el_text === 'string' ? element.$el_text.slice(0, MAX_TEXT_CHARS) : element.$el_text;
  if (elementText) attributes.set('text', elementText);
  attributes.set('nth-child', element.nth_child ?? 0);
  attributes.set('nth-of-type', element.nth_of_type ?? 0);
  const href = typeof element.attr__href === 'string' ? element.attr__href.slice(0, MAX_HREF_CHARS) : element.attr__href;
  if (href) attributes.set('href', href);
  if (element.attr__id) attributes.set('attr_id', element.attr__id);
  for (const [key, value] of Object.entries(element)) if (key.startsWith('attr__')) attributes.set(key, value);
  // PostHog sorts a class list in place, so its attr__class attribute shows the sorted list too.
  if (Array.isArray(element.attr__class)) attributes.set('attr__class', classes);

  // localeCompare, as PostHog sorts them, so chains built here equal the ones PostHog stored for the same element.
  const sorted = [...attributes].sort(([a], [b]) => a.localeCompare(b));
  return `${text}:${sorted.map(([key, value]) => `${escapeQuotes(key)}="${escapeQuotes(String(value))}"`).join('')}`;
}

function classesOf(element: RawElement): string[] {
  const value = element.attr__class;
  if (Array.isArray(value)) return value.map(String);
  return typeof value === 'string' && value !== '' ? value.split(' ') : [];
}

function escapeQuotes(text: string): string {
  return text.replace(/"/g, '\\"');
}
