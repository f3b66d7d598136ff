import type { ComponentChildren } from 'preact';

/** Previous / next over a `{count, next, previous}` listing, addressed by offset. */
export function Pagination({
  count,
  offset,
  limit,
  onChange,
  label,
}: {
  count: number;
  offset: number;
  limit: number;
  onChange: (offset: number) => void;
  label: string;
}) {
  if (count <= limit && offset === 0) return null;
  const last = Math.min(offset + limit, count);
  return (
    <Pager label={label} offset={offset} limit={limit} hasNext={last < count} onChange={onChange}>
      {count === 0 ? 0 : offset + 1}–{last} of {count.toLocaleString()}
    </Pager>
  );
}

/** Previous / next over a listing that says whether more follows (`has_next`) instead of counting. */
export function NextPagination({
  offset,
  limit,
  shown,
  hasNext,
  onChange,
  label,
}: {
  offset: number;
  limit: number;
  /** Rows on this page. */
  shown: number;
  hasNext: boolean;
  onChange: (offset: number) => void;
  label: string;
}) {
  if (offset === 0 && !hasNext) return null;
  return (
    <Pager label={label} offset={offset} limit={limit} hasNext={hasNext} onChange={onChange}>
      {shown === 0 ? 0 : offset + 1}–{offset + shown}
    </Pager>
  );
}

function Pager({
  label,
  offset,
  limit,
  hasNext,
  onChange,
  children,
}: {
  label: string;
  offset: number;
  limit: number;
  hasNext: boolean;
  onChange: (offset: number) => void;
  children: ComponentChildren;
}) {
  return (
    <nav class="pagination" aria-label={label}>
      <button type="button" class="secondary" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - limit))}>
        Previous
      </button>
      <span aria-live="polite">{children}</span>
      <button type="button" class="secondary" disabled={!hasNext} onClick={() => onChange(offset + limit)}>
        Next
      </button>
    </nav>
  );
}
