/**
 * An lz-string base64 stream of one character repeated, written code by code: its first literal, then codes
 * that each name the entry being defined (the previous output plus its first character), so output k is k + 1
 * characters long and `codes` codes expand to about codes² / 2 characters. lz-string's own compressor takes
 * seconds to build one that expands to hundreds of megabytes; this takes milliseconds.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

export function lz64Bomb(codes: number, char = 'a'): string {
  const bits: number[] = [];
  const write = (value: number, width: number) => {
    for (let bit = 0; bit < width; bit++) bits.push((value >> bit) & 1);
  };
  write(0, 2);
  write(char.charCodeAt(0), 8);
  let size = 4;
  let width = 3;
  let untilWider = 4;
  for (let i = 0; i < codes; i++) {
    write(size, width);
    size++;
    if (--untilWider === 0) {
      untilWider = 2 ** width;
      width++;
    }
  }
  write(2, width);
  let text = '';
  for (let at = 0; at < bits.length; at += 6) {
    let sextet = 0;
    for (let bit = 0; bit < 6; bit++) sextet = (sextet << 1) | (bits[at + bit] ?? 0);
    text += ALPHABET[sextet];
  }
  return text.padEnd(Math.ceil(text.length / 4) * 4, '=');
}

/** Characters `lz64Bomb(codes)` expands to. */
export function lz64BombLength(codes: number): number {
  return 1 + (codes * (codes + 3)) / 2;
}
