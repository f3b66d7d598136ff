import type { ComponentChildren } from 'preact';

/** A titled card of a screen; `id` labels the section for assistive technology; `kind` is a class a screen's layout places it by. */
export function Panel({ id, title, children, wide, kind }: { id: string; title: string; children: ComponentChildren; wide?: boolean; kind?: string }) {
  return (
    <section class={['panel', wide && 'wide', kind].filter(Boolean).join(' ')} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </section>
  );
}
