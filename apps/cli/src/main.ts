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

/**
 * The failure in one line of words, its causes' after it (fetch's "fetch failed: connect
 * ECONNREFUSED …"); with HERALD_DEBUG=1 the stacks too, as always for a programming error (a
 * TypeError, say, with no cause: fetch's network failures are TypeErrors with one), whose message
 * alone says nothing of where it arose.
 */
function whatFailed(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const causes: Error[] = [];
  for (let cause = err.cause; cause instanceof Error && causes.length < 5; cause = cause.cause) causes.push(cause);
  const bug =
    causes.length === 0 &&
    (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError || err instanceof SyntaxError);
  if (!bug && !/^(1|true|yes)$/i.test(process.env['HERALD_DEBUG'] ?? ''))
    return [err, ...causes].map((e) => e.message).join(': ');
  return [
    err.message,
    ...stackFrames(err),
    ...causes.flatMap((cause) => [`caused by: ${cause.message}`, ...stackFrames(cause)]),
  ].join('\n');
}

/** The "    at …" lines of an error's stack. */
function stackFrames(err: Error): string[] {
  return (err.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
}
