import { ActionInterrupted } from '@herald/db';

/**
 * A command stopped by a signal (an operator's Ctrl-C) once it has let go of what it held: main
 * prints it and exits with `exitCode` (128 + the signal's number, as a shell reports it) without
 * waiting for anything it abandoned. An audited action records it as failed, interrupted.
 */
export class CommandInterrupted extends ActionInterrupted {
  override readonly name = 'CommandInterrupted';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }

  /** The same interruption, saying how far the command got. */
  adding(progress: string): CommandInterrupted {
    return new CommandInterrupted(`${this.message}: ${progress}`, this.exitCode);
  }
}
