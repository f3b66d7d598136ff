import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Problem } from './problem';

/**
 * A modal dialog (the browser's `<dialog>`: focus moves in and stays there, Escape closes it, focus goes back to
 * what opened it), titled for assistive technology. Shown while `open`; `onClose` runs however it closes.
 */
export function Dialog({
  open,
  title,
  onClose,
  children,
  wide,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  const id = `dialog-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <dialog ref={ref} class={wide ? 'dialog wide' : 'dialog'} aria-labelledby={id} onClose={onClose}>
      <div class="dialog-header">
        <h2 id={id}>{title}</h2>
        <button type="button" class="icon" aria-label="Close" onClick={onClose}>
          ×
        </button>
      </div>
      {open && children}
    </dialog>
  );
}

/**
 * A dialog that asks before a destructive action: `children` say what happens, Cancel closes, the danger button
 * runs `onConfirm`; a failure is shown in the dialog, which stays open.
 */
export function ConfirmDialog({
  open,
  title,
  confirm,
  onConfirm,
  onClose,
  children,
}: {
  open: boolean;
  title: string;
  /** The danger button's label. */
  confirm: string;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  children: ComponentChildren;
}) {
  const [state, setState] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const run = async (event: Event) => {
    event.preventDefault();
    setState({ busy: true });
    try {
      await onConfirm();
      setState({ busy: false });
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  return (
    <Dialog open={open} title={title} onClose={onClose}>
      <form onSubmit={(event) => void run(event)}>
        {children}
        {state.error !== undefined && <Problem error={state.error} />}
        <div class="dialog-actions">
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class="danger" disabled={state.busy}>
            {state.busy ? 'Working…' : confirm}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
