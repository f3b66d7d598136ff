import type { ComponentChildren } from 'preact';

/** A titled card of a screen; `id` labels the section for assistive technology. */
export function Panel({ id, title, children, wide }: { id: string; title: string; children: ComponentChildren; wide?: boolean }) {
  return (
    <section class={wide ? 'panel wide' : 'panel'} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </section>
  );
}
