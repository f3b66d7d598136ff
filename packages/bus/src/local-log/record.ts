/**
 * On-disk framing of LocalLogBus records. A segment file is a plain sequence of frames:
 *
 *   u32 LE  body length
 *   u32 LE  CRC-32 of the body
 *   body:   u8 format version (1)
 *           u64 LE offset, u64 LE append time (ms since epoch)
 *           u16 LE key length, key (UTF-8)
 *           u16 LE header count, then per header: u16 LE name length, name, u32 LE value length, value (UTF-8)
 *           value (the rest of the body)
 *
 * The length + CRC pair is what recovery relies on: a write torn by a crash leaves a frame whose length runs past
 * the end of the file or whose CRC does not match, and nothing intact after it. Each frame also
 * carries its own offset, so a frame read from the wrong place is detected instead of being delivered.
 */
import { crc32 } from 'node:zlib';
import { StorageError } from '@plover/core';
import type { BusMessage, OutgoingMessage } from '../port';

export const FRAME_HEADER_BYTES = 8;
const FORMAT_VERSION = 1;
/** Version, offset, timestamp, key length, header count. */
const FIXED_BODY_BYTES = 1 + 8 + 8 + 2 + 2;
const U16_MAX = 0xffff;
const TWO_POW_32 = 2 ** 32;

/** Encodes `messages` as consecutive frames with offsets `firstOffset`, `firstOffset + 1`, … in one buffer. */
export function encodeFrames(messages: readonly OutgoingMessage[], firstOffset: number, timestamp: number): Buffer {
  let total = 0;
  for (const message of messages) total += FRAME_HEADER_BYTES + bodyBytes(message);
  const buffer = Buffer.allocUnsafe(total);
  let position = 0;
  let offset = firstOffset;
  for (const message of messages) position = writeFrame(buffer, position, message, offset++, timestamp);
  return buffer;
}

function bodyBytes(message: OutgoingMessage): number {
  const keyBytes = Buffer.byteLength(message.key);
  if (keyBytes > U16_MAX) throw invalidMessage(`key of ${keyBytes} bytes exceeds ${U16_MAX}`);
  let bytes = FIXED_BODY_BYTES + keyBytes + message.value.length;
  if (message.headers) {
    const names = Object.keys(message.headers);
    if (names.length > U16_MAX) throw invalidMessage(`${names.length} headers exceed ${U16_MAX}`);
    for (const name of names) {
      const nameBytes = Buffer.byteLength(name);
      if (nameBytes > U16_MAX) throw invalidMessage(`header name of ${nameBytes} bytes exceeds ${U16_MAX}`);
      bytes += 2 + nameBytes + 4 + Buffer.byteLength(message.headers[name] ?? '');
    }
  }
  return bytes;
}

function invalidMessage(detail: string): StorageError {
  return new StorageError(`LocalLogBus cannot store the message: ${detail}`, false, 'INVALID_MESSAGE');
}

function writeFrame(buffer: Buffer, start: number, message: OutgoingMessage, offset: number, timestamp: number): number {
  const bodyStart = start + FRAME_HEADER_BYTES;
  let position = buffer.writeUInt8(FORMAT_VERSION, bodyStart);
  position = writeUInt64(buffer, offset, position);
  position = writeUInt64(buffer, timestamp, position);
  position = writeString16(buffer, message.key, position);
  const headers = message.headers ? Object.entries(message.headers) : [];
  position = buffer.writeUInt16LE(headers.length, position);
  for (const [name, value] of headers) {
    position = writeString16(buffer, name, position);
    const valueBytes = buffer.write(value, position + 4, 'utf8');
    position = buffer.writeUInt32LE(valueBytes, position) + valueBytes;
  }
  position += message.value.copy(buffer, position);
  buffer.writeUInt32LE(position - bodyStart, start);
  buffer.writeUInt32LE(crc32(buffer.subarray(bodyStart, position)), start + 4);
  return position;
}

function writeString16(buffer: Buffer, text: string, position: number): number {
  const bytes = buffer.write(text, position + 2, 'utf8');
  return buffer.writeUInt16LE(bytes, position) + bytes;
}

function writeUInt64(buffer: Buffer, value: number, position: number): number {
  buffer.writeUInt32LE(value % TWO_POW_32, position);
  return buffer.writeUInt32LE(Math.floor(value / TWO_POW_32), position + 4);
}

function readUInt64(buffer: Buffer, position: number): number {
  return buffer.readUInt32LE(position) + buffer.readUInt32LE(position + 4) * TWO_POW_32;
}

export interface FrameScan {
  /** Bytes taken by the intact frames at the start of the buffer. */
  bytes: number;
  /** How many intact frames those are. */
  count: number;
  /** When the buffer ends inside the frame after them: that frame's full length (as far as its header tells). */
  cutFrameBytes: number;
  /** The frame after them is damaged: bad length, CRC, version or offset. */
  damaged: boolean;
}

/** Finds the intact frames at the start of `buffer`, the first of which must have offset `firstOffset`. */
export function scanFrames(buffer: Buffer, firstOffset: number): FrameScan {
  let position = 0;
  let count = 0;
  const result = (cutFrameBytes: number, damaged: boolean): FrameScan => ({ bytes: position, count, cutFrameBytes, damaged });
  for (;;) {
    const left = buffer.length - position;
    if (left === 0) return result(0, false);
    if (left < FRAME_HEADER_BYTES) return result(FRAME_HEADER_BYTES, false);
    const bodyLength = buffer.readUInt32LE(position);
    if (bodyLength < FIXED_BODY_BYTES) return result(0, true);
    const frameBytes = FRAME_HEADER_BYTES + bodyLength;
    if (left < frameBytes) return result(frameBytes, false);
    const bodyStart = position + FRAME_HEADER_BYTES;
    const intact =
      crc32(buffer.subarray(bodyStart, position + frameBytes)) === buffer.readUInt32LE(position + 4) &&
      buffer[bodyStart] === FORMAT_VERSION &&
      readUInt64(buffer, bodyStart + 1) === firstOffset + count;
    if (!intact) return result(0, true);
    position += frameBytes;
    count++;
  }
}

/**
 * Where the first intact frame with an offset of at least `minOffset` starts in `buffer` (searched at every
 * byte), or -1. The length, version and offset fields rule out nearly every position before a CRC is computed.
 */
export function findIntactFrame(buffer: Buffer, minOffset: number): number {
  for (let position = 0; position + FRAME_HEADER_BYTES + FIXED_BODY_BYTES <= buffer.length; position++) {
    const bodyLength = buffer.readUInt32LE(position);
    const bodyStart = position + FRAME_HEADER_BYTES;
    const end = bodyStart + bodyLength;
    if (bodyLength < FIXED_BODY_BYTES || end > buffer.length || buffer[bodyStart] !== FORMAT_VERSION) continue;
    if (readUInt64(buffer, bodyStart + 1) < minOffset) continue;
    if (crc32(buffer.subarray(bodyStart, end)) === buffer.readUInt32LE(position + 4)) return position;
  }
  return -1;
}

/** Where the frame starting at `position` of a buffer of intact frames ends. */
export function frameEnd(buffer: Buffer, position: number): number {
  return position + FRAME_HEADER_BYTES + buffer.readUInt32LE(position);
}

/** Decodes the intact frame at `position`. Key, headers and value are copies or views owned by the message. */
export function decodeFrame(buffer: Buffer, position: number, topic: string, partition: number): BusMessage {
  const end = frameEnd(buffer, position);
  let cursor = position + FRAME_HEADER_BYTES + 1;
  const offset = readUInt64(buffer, cursor);
  const timestamp = readUInt64(buffer, cursor + 8);
  cursor += 16;
  const key = readString16(buffer, cursor);
  cursor += 2 + buffer.readUInt16LE(cursor);
  const headerCount = buffer.readUInt16LE(cursor);
  cursor += 2;
  const headers: Record<string, string> = {};
  for (let i = 0; i < headerCount; i++) {
    const name = readString16(buffer, cursor);
    cursor += 2 + buffer.readUInt16LE(cursor);
    const valueBytes = buffer.readUInt32LE(cursor);
    headers[name] = buffer.toString('utf8', cursor + 4, cursor + 4 + valueBytes);
    cursor += 4 + valueBytes;
  }
  return { topic, partition, offset: String(offset), key, value: buffer.subarray(cursor, end), headers, timestamp };
}

function readString16(buffer: Buffer, position: number): string {
  return buffer.toString('utf8', position + 2, position + 2 + buffer.readUInt16LE(position));
}
