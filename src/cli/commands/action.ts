import type { Command } from 'commander';

/**
 * Sets `fn` as the action of `command`: it gets the options and the positional arguments
 * (commander passes them as separate parameters, then the command; this reads them from it).
 */
export function act<O extends object>(
  command: Command,
  fn: (opts: O, args: string[]) => Promise<void>,
): Command {
  return command.action((...params: unknown[]) => {
    const self = params[params.length - 1] as Command;
    return fn(self.opts<O>(), self.args);
  });
}
