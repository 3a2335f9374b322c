/** The paging flags of the list commands: one page per call, the next one by its cursor. */
import type { Command } from 'commander';
import { integer } from './publish-options.js';

export interface PagingFlags {
  count?: number;
  cursor?: string;
}

/** Adds `--count` (the page size; 100 by default, at most `max`) and `--cursor`. */
export function withPaging(command: Command, max = 100): Command {
  return command
    .option(
      '--count <n>',
      `at most this many (${max === 100 ? '100' : `100, up to ${max}`})`,
      integer,
    )
    .option('--cursor <cursor>', 'the next page, from a previous --json answer');
}
