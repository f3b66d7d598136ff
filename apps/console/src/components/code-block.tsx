import { useState } from 'preact/hooks';

/** Preformatted code with a button that copies it. */
export function CodeBlock({ code, label }: { code: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = () =>
    navigator.clipboard.writeText(code).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  return (
    <div class="code-block">
      <pre aria-label={label} tabIndex={0}>
        <code>{code}</code>
      </pre>
      <button type="button" class="secondary" onClick={() => void copy()}>
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}
