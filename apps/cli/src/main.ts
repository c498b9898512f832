import { Command } from 'commander';
import { registerAdminCommands } from './commands/admin-commands.ts';
import { registerPublishCommands } from './commands/publish-commands.ts';
import { registerStatusCommand } from './commands/status-command.ts';
import { registerParkedCommands } from './commands/parked-commands.ts';
import { registerLimitCommands } from './commands/limit-commands.ts';
import { registerScheduleCommands } from './commands/schedule-commands.ts';
import { registerAppCommands } from './commands/app-commands.ts';
import { registerKeyCommands } from './commands/key-commands.ts';

const program = new Command('herald').description('Herald push delivery: send, register, inspect').showHelpAfterError();
registerPublishCommands(program);
registerAdminCommands(program);
registerStatusCommand(program);
registerParkedCommands(program);
registerLimitCommands(program);
registerScheduleCommands(program);
registerAppCommands(program);
registerKeyCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`herald: ${(err as Error).message}\n`);
  process.exitCode = 1;
}
