/** `ferry flow-control`: the account's flow-control keys, and pausing one. */
import { Command } from 'commander';
import type { FlowControlKey } from '../../sdk/flow-control.js';
import { act } from './action.js';
import { messagingClient, withConnection, type ConnectionFlags } from './connection.js';
import { cell, print, record, table, time } from './output.js';

/** `count/max`, or `-` when the key has no such limit (max 0). */
const limit = (count: number, max: number): string => (max === 0 ? '-' : `${count}/${max}`);

const parallelism = (k: FlowControlKey): string => limit(k.parallelismCount, k.parallelismMax);

const rate = (k: FlowControlKey): string =>
  k.rateMax === 0 ? '-' : `${limit(k.rateCount, k.rateMax)} per ${k.ratePeriod}s`;

/** Which limits are pinned (publishes no longer change them). */
const pinned = (k: FlowControlKey): string[] => [
  ...(k.isPinnedParallelism ? ['parallelism'] : []),
  ...(k.isPinnedRate ? ['rate'] : []),
];

const yesNo = (flag: boolean): string => (flag ? 'yes' : 'no');

const keyRow = (k: FlowControlKey): string[] => [
  cell(k.flowControlKey),
  String(k.waitListSize),
  parallelism(k),
  rate(k),
  cell(pinned(k)),
  yesNo(k.isPaused),
];

const keyRecord = (k: FlowControlKey): string =>
  record([
    ['key', k.flowControlKey],
    ['waiting', k.waitListSize],
    ['parallelism', parallelism(k)],
    ['rate', rate(k)],
    ['rate period start', time(k.ratePeriodStart * 1000)],
    ['pinned', pinned(k)],
    ['paused', yesNo(k.isPaused)],
  ]);

export function flowControlCommand(): Command {
  const list = act<ConnectionFlags & { search?: string }>(
    withConnection(new Command('list').description('every flow-control key, by name')).option(
      '--search <text>',
      'only keys whose name contains this',
    ),
    async (opts) => {
      const keys = await messagingClient(opts).flowControl.list(opts.search);
      print(opts.json, keys, () =>
        table(['KEY', 'WAITING', 'PARALLELISM', 'RATE', 'PINNED', 'PAUSED'], keys.map(keyRow)),
      );
    },
  );
  const get = act<ConnectionFlags>(
    withConnection(new Command('get').description('show one key')).argument('<key>'),
    async (opts, [key = '']) => {
      const k = await messagingClient(opts).flowControl.get(key);
      print(opts.json, k, () => keyRecord(k));
    },
  );
  const toggle = (name: 'pause' | 'resume', description: string, verb: string) =>
    act<ConnectionFlags>(
      withConnection(new Command(name).description(description)).argument('<key>'),
      async (opts, [key = '']) => {
        const k = await messagingClient(opts).flowControl[name](key);
        print(opts.json, k, () => `${verb} ${cell(k.flowControlKey)}`);
      },
    );
  return new Command('flow-control')
    .description('flow-control keys (publish with one: ferry publish --flow-control-key)')
    .addCommand(list)
    .addCommand(get)
    .addCommand(
      toggle('pause', "stop starting the key's messages (publishes still wait)", 'paused'),
    )
    .addCommand(toggle('resume', "start the key's messages again", 'resumed'));
}
