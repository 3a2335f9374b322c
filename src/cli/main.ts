#!/usr/bin/env node
/**
 * The `ferry` command. `ferry start [options]` runs the API, the delivery engine and maintenance
 * in one process (serve.ts); SIGTERM/SIGINT stop it gracefully (a second signal exits at once).
 * The client commands (`ferry publish`, `ferry dlq …`) are in program.ts and commands/.
 */
import { Command } from 'commander';
import { addConfigOptions, givenFlags, resolveConfig } from './config.js';
import { describeFailure } from './errors.js';
import { buildProgram } from './program.js';

function startCommand(): Command {
  return addConfigOptions(
    new Command('start').description('run the API, deliveries, schedules and maintenance'),
  ).action((_opts: unknown, command: Command) =>
    import('./serve.js').then(({ start }) => start(resolveConfig(givenFlags(command)))),
  );
}

function usersCommand(): Command {
  const create = addConfigOptions(
    new Command('create')
      .description(
        'create a management user in the storage the options name (SQLite: server stopped)',
      )
      .requiredOption('--email <address>', 'its e-mail')
      .option('--admin', 'make it an administrator'),
  ).action(async (opts: { email: string; admin?: boolean }, command: Command) => {
    const config = resolveConfig(givenFlags(command));
    const { createUserOffline } = await import('./serve.js');
    await createUserOffline(config, opts.email, opts.admin === true);
  });
  return new Command('users').description('management users').addCommand(create);
}

const program = buildProgram([startCommand(), usersCommand()]);
program.parseAsync(process.argv).catch((error: unknown) => {
  const { message, status } = describeFailure(error);
  if (message !== '') process.stderr.write(`ferry: ${message}\n`);
  process.exit(status);
});
