/**
 * The `ferry` command line, on commander: one subcommand per resource (`ferry dlq list`), each
 * with its own `--help`. Parse errors are thrown (exitOverride) and printed by main.ts as one
 * line with exit status 2.
 */
import { Command } from 'commander';
import { VERSION } from '../core/version.js';
import { accountsCommand } from './commands/accounts.js';
import { backupCommands } from './commands/backup.js';
import { flowControlCommand } from './commands/flow-control.js';
import { groupsCommand, queuesCommand } from './commands/groups.js';
import { logsCommand } from './commands/logs.js';
import { dlqCommand, keysCommand, messagesCommand, publishCommand } from './commands/messaging.js';
import { schedulesCommand } from './commands/schedules.js';
import { workflowsCommand } from './commands/workflows.js';

/** Makes `command` and every subcommand throw on a parse error instead of exiting. */
function quiet(command: Command): void {
  command.exitOverride().configureOutput({ outputError: () => undefined });
  for (const sub of command.commands) quiet(sub);
}

/** The whole program; `serverCommands` (start, users) come from main.ts. */
export function buildProgram(serverCommands: Command[]): Command {
  const program = new Command('ferry')
    .description('Ferry, a self-hostable HTTP message queue')
    .version(VERSION, '-V, --version', 'print the version')
    .showSuggestionAfterError()
    .addHelpText(
      'after',
      () =>
        '\nClient commands connect with --url/FERRY_URL and --token/FERRY_TOKEN, else with\n' +
        '<data dir>/credentials.json (written by ferry start). See docs/cli.md.\n' +
        // `ferry --help` also shows the server's settings, as most runs are `ferry start`.
        (serverCommands[0] ? `\n${serverCommands[0].helpInformation()}` : ''),
    );
  for (const command of [
    ...serverCommands,
    publishCommand(),
    logsCommand(),
    messagesCommand(),
    dlqCommand(),
    schedulesCommand(),
    groupsCommand(),
    queuesCommand(),
    workflowsCommand(),
    flowControlCommand(),
    keysCommand(),
    accountsCommand(),
    ...backupCommands(),
  ]) {
    program.addCommand(command);
  }
  quiet(program);
  return program;
}
