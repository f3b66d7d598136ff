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
    <nav class="pagination" aria-label={label}>
      <button type="button" class="secondary" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - limit))}>
        Previous
      </button>
      <span aria-live="polite">
        {count === 0 ? 0 : offset + 1}–{last} of {count.toLocaleString()}
      </span>
      <button type="button" class="secondary" disabled={last >= count} onClick={() => onChange(offset + limit)}>
        Next
      </button>
    </nav>
  );
}
