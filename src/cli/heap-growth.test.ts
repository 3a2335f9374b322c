import { describe, expect, it } from 'vitest';
import { HEAP_GROWTH_FLAG, heapGrowthFlag } from './heap-growth.js';

describe('heapGrowthFlag', () => {
  it('sets the growth factor when the user gave none', () => {
    expect(heapGrowthFlag([], '')).toBe(HEAP_GROWTH_FLAG);
    expect(heapGrowthFlag(['--enable-source-maps'], '--max-old-space-size=512')).toBe(
      HEAP_GROWTH_FLAG,
    );
    expect(heapGrowthFlag([])).toBe(HEAP_GROWTH_FLAG);
  });

  it('leaves a factor given on the command line or in NODE_OPTIONS, in either spelling', () => {
    expect(heapGrowthFlag(['--heap-growing-percent=50'], '')).toBeUndefined();
    expect(heapGrowthFlag([], '--trace-gc --heap_growing_percent=100')).toBeUndefined();
  });
});
