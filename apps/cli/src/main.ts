import { Command } from 'commander';
import { registerAdminCommands } from './commands/admin-commands.ts';
import { registerPublishCommands } from './commands/publish-commands.ts';
import { registerStatusCommand } from './commands/status-command.ts';
import { registerParkedCommands } from './commands/parked-commands.ts';
import { registerLimitCommands } from './commands/limit-commands.ts';
import { registerScheduleCommands } from './commands/schedule-commands.ts';
import { registerAppCommands } from './commands/app-commands.ts';
import { registerKeyCommands } from './commands/key-commands.ts';
import { registerAuditCommand } from './commands/audit-command.ts';
import { registerPreferenceCommands } from './commands/preference-commands.ts';
import { registerTopicCommands } from './commands/topic-commands.ts';
import { registerFollowCommands } from './commands/follow-commands.ts';
import { registerJobCommands } from './commands/job-commands.ts';
import { registerStackCommand } from './commands/stack-command.ts';
import { heraldVersion } from './version.ts';
import { CommandInterrupted } from './command-interrupted.ts';
import { whatFailed } from './failure-text.ts';

const program = new Command('herald')
  .description('Herald push delivery: send, register, inspect')
  .version(heraldVersion(), '-V, --version', "print Herald's version")
  .showHelpAfterError();
registerPublishCommands(program);
registerAdminCommands(program);
registerPreferenceCommands(program);
registerTopicCommands(program);
registerFollowCommands(program);
registerStatusCommand(program);
registerParkedCommands(program);
registerLimitCommands(program);
registerScheduleCommands(program);
registerAppCommands(program);
registerKeyCommands(program);
registerAuditCommand(program);
registerJobCommands(program);
registerStackCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommandInterrupted) {
    // On a line of its own, past a progress bar drawn on the terminal's.
    process.stderr.write(`${process.stderr.isTTY ? '\n' : ''}${err.message}\n`);
    process.exit(err.exitCode);
  }
  process.stderr.write(`herald: ${whatFailed(err)}\n`);
  process.exitCode = 1;
}
