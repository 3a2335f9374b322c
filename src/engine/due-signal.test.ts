/**
 * Which committed due times wake the other nodes (due-signal.ts). The reports of one turn share
 * one NOTIFY; a write due now wakes no other node while this node's engine has room to claim it.
 * test/retry-gaps.test.ts checks the wake-ups between real nodes on PostgreSQL.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { silentLogger } from '../core/logger.js';
import { DueSignal } from './due-signal.js';

describe('DueSignal', () => {
  let clock: ManualClock;
  let local: number[];
  let notified: (number | undefined)[];
  let room: boolean;
  let signal: DueSignal;

  beforeEach(() => {
    clock = new ManualClock(1_000_000);
    local = [];
    notified = [];
    room = true;
    signal = new DueSignal({
      clock,
      logger: silentLogger,
      local: (dueAt) => local.push(dueAt),
      notify: (dueAt) => {
        notified.push(dueAt);
        return Promise.resolve();
      },
      localHasRoom: () => room,
    });
  });

  it('wakes no other node for a write due now while this engine has room', async () => {
    signal.report(0);
    signal.report(clock.now());
    await nextTurn();
    expect(local).toEqual([0, clock.now()]);
    expect(notified).toEqual([]);
  });

  it('wakes the other nodes, once per turn, when this engine has no room', async () => {
    room = false;
    signal.report(0);
    signal.report(clock.now() - 5);
    await nextTurn();
    expect(notified).toEqual([undefined]);
    signal.report(0);
    await nextTurn();
    expect(notified).toEqual([undefined, undefined]);
  });

  it('wakes the other nodes for a later due time even with room, and not again for a later one', async () => {
    const later = clock.now() + 1_000;
    signal.report(later);
    await nextTurn();
    expect(notified).toEqual([later]);
    expect(local).toEqual([later]);
    // A node woken at `later` reads what is due then, this write included.
    signal.report(later + 500);
    await nextTurn();
    expect(notified).toEqual([later]);
  });
});
