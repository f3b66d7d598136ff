import type { ComponentChildren } from 'preact';

/** A screen's heading (focused after navigation, see shell.tsx) with an optional line under it and actions beside it. */
export function PageHeader({ title, subtitle, children }: { title: string; subtitle?: ComponentChildren; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <div>
        <h1 tabIndex={-1}>{title}</h1>
        {subtitle && <p class="muted">{subtitle}</p>}
      </div>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}
