import { decodePayload as decodeHttpPayload, type DecompressionLease, type EncodedRequest } from '@plover/http';
import { captureError } from './errors';

export type { EncodedRequest } from '@plover/http';

/** The JSON text of a capture payload: 400 for undecodable input, 413 past `maxBytes`, in capture's words. */
export function decodePayload(request: EncodedRequest, maxBytes: number, lease?: DecompressionLease): Promise<string> {
  return decodeHttpPayload(request, maxBytes, captureError, lease);
}
