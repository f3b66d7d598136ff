/**
 * Arranging a dashboard's tiles: the console shows them in two columns (one on a phone) in their `order`, and a
 * drag writes every tile's `sm` layout anew — two tiles of half the 12-column width per row — so that the API's
 * order (by `y`, then `x`) is the one shown. No DOM here, for unit tests.
 */
import type { TileLayout, TileWrite } from '../api/types';

const WIDTH = 6;
const HEIGHT = 5;

/** `ids` with `moved` taken to where `target` is; the tiles between shift one place towards where it came from. */
export function moveTile(ids: readonly number[], moved: number, target: number): number[] {
  const from = ids.indexOf(moved);
  const to = ids.indexOf(target);
  if (from < 0 || to < 0 || from === to) return [...ids];
  const rest = ids.filter((id) => id !== moved);
  rest.splice(to, 0, moved);
  return rest;
}

/** The tile writes that lay `ids` out in this order. */
export function gridLayouts(ids: readonly number[]): TileWrite[] {
  return ids.map((id, index) => {
    const sm: TileLayout = { x: (index % 2) * WIDTH, y: Math.floor(index / 2) * HEIGHT, w: WIDTH, h: HEIGHT };
    return { id, layouts: { sm } };
  });
}
