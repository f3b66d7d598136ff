import type { EventRow } from '../api/types';
import { CodeBlock } from '../components/code-block';
import { Dialog } from '../components/dialog';

/** The whole of one event, as the API answers it, in a dialog with a copy button. */
export function EventDialog({ event, onClose }: { event: EventRow | null; onClose: () => void }) {
  return (
    <Dialog open={event !== null} title={event ? `Event ${event.event}` : 'Event'} onClose={onClose} wide>
      {event && <CodeBlock code={JSON.stringify(event, null, 2)} label={`The JSON of event ${event.event}`} />}
    </Dialog>
  );
}
