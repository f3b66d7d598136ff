/** Test messages that carry a numeric id in a 1 KB value, so that a consumer can tell which ones arrived. */
const MESSAGE_BYTES = 1024;

export function messageValue(id: number): Buffer {
  return Buffer.from(String(id).padEnd(MESSAGE_BYTES, '.'));
}

export function messageId(value: Buffer): number {
  return Number.parseInt(value.toString('latin1', 0, 20), 10);
}
