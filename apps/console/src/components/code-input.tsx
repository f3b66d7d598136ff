/**
 * A text area for HogQL with syntax colours: the area's own text is transparent (its caret and selection stay
 * visible) over a `<pre>` that draws the same text coloured, scrolled with it. An error's range is underlined in
 * the drawing, and the area is marked invalid and described by the message the caller shows (`describedBy`).
 * Ctrl+Enter or ⌘+Enter calls `onRun`.
 */
import { useMemo, useRef } from 'preact/hooks';
import { highlight } from '../sql/highlight';

export function CodeInput({
  id,
  value,
  onInput,
  onRun,
  error,
  describedBy,
  rows = 8,
}: {
  id: string;
  value: string;
  onInput: (value: string) => void;
  onRun: () => void;
  error: { start: number; end: number } | null;
  describedBy?: string;
  rows?: number;
}) {
  const drawing = useRef<HTMLPreElement>(null);
  const pieces = useMemo(() => highlight(value, error), [value, error]);
  const follow = (area: HTMLTextAreaElement) => {
    if (!drawing.current) return;
    drawing.current.scrollTop = area.scrollTop;
    drawing.current.scrollLeft = area.scrollLeft;
  };
  return (
    <div class="code-input">
      <pre ref={drawing} aria-hidden="true">
        {pieces.map((piece, index) => (
          <span key={index} class={piece.error ? `tok-${piece.kind} tok-error` : `tok-${piece.kind}`}>
            {piece.text}
          </span>
        ))}
        {/* A last line break in the text needs a line after it to be drawn. */}
        {'\n'}
      </pre>
      <textarea
        id={id}
        value={value}
        rows={rows}
        spellcheck={false}
        autocapitalize="off"
        autocomplete="off"
        aria-invalid={error !== null}
        aria-describedby={describedBy}
        onInput={(event) => {
          onInput(event.currentTarget.value);
          follow(event.currentTarget);
        }}
        onScroll={(event) => follow(event.currentTarget)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
            event.preventDefault();
            onRun();
          }
        }}
      />
    </div>
  );
}
