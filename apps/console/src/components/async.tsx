import type { ComponentChildren } from 'preact';
import type { Loaded } from '../hooks';
import { Problem } from './problem';

/** The children for loaded data, a placeholder while loading, a {@link Problem} on failure. */
export function Async<T>({
  value,
  children,
  onRetry,
  label = 'Loading…',
}: {
  value: Loaded<T>;
  children: (data: T) => ComponentChildren;
  onRetry?: () => void;
  label?: string;
}) {
  if (value.status === 'loading') {
    return (
      <p class="loading" role="status">
        {label}
      </p>
    );
  }
  if (value.status === 'error') return <Problem error={value.error} onRetry={onRetry} />;
  return <>{children(value.data)}</>;
}
