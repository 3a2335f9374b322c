import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWTH_FLAG, START_NODE_FLAGS, heapGrowthFlag } from './heap-growth.js';

const read = (path: string): string =>
  readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('START_NODE_FLAGS', () => {
  // The benchmark runs Ferry with these flags as `npm start` does: the two must not drift apart.
  it('is what `npm start` and the documented systemd unit pass to node', () => {
    const flags = START_NODE_FLAGS.join(' ');
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> })
      .scripts;
    expect(scripts.start).toContain(`node ${flags} dist/cli/main.js start`);
    expect(read('docs/operations.md')).toContain(
      `ExecStart=/usr/bin/node ${flags} /opt/ferry/dist/cli/main.js start`,
    );
  });
});

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
