import { describe, expect, it } from 'vitest';
import { nextStepRows } from './publisher.js';

describe('nextStepRows: the size of the next step of a large commit', () => {
  it.each([
    // rows, ms the last step held the event loop, next rows
    [50, 10, 50], // on target
    [50, 20, 25], // twice too long: half
    [100, 12.5, 80],
    [50, 100, 25], // never fewer than 25 (each step costs a turn)
    [50, 1, 100], // never more than 100 (PostgreSQL: as many round trips as before)
    [50, 0, 100], // a step that took no measurable time
  ])('%i rows that held %f ms → %i', (rows, heldMs, next) => {
    expect(nextStepRows(rows, heldMs)).toBe(next);
  });
});
