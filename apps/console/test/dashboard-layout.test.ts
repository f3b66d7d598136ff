/** Rearranging a dashboard's tiles: the new order, and the layouts that make the API answer it. */
import { gridLayouts, moveTile } from '../src/dashboards/layout';

describe('moving a tile', () => {
  it('takes the place of the tile it is dropped on, from either side', () => {
    expect(moveTile([1, 2, 3, 4], 4, 2)).toEqual([1, 4, 2, 3]);
    expect(moveTile([1, 2, 3, 4], 1, 3)).toEqual([2, 3, 1, 4]);
    expect(moveTile([1, 2, 3], 2, 2)).toEqual([1, 2, 3]);
    expect(moveTile([1, 2, 3], 9, 2)).toEqual([1, 2, 3]);
  });

  it('lays tiles out two to a row of 12 columns, in order', () => {
    expect(gridLayouts([7, 3, 5])).toEqual([
      { id: 7, layouts: { sm: { x: 0, y: 0, w: 6, h: 5 } } },
      { id: 3, layouts: { sm: { x: 6, y: 0, w: 6, h: 5 } } },
      { id: 5, layouts: { sm: { x: 0, y: 5, w: 6, h: 5 } } },
    ]);
  });
});
