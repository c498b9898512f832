/**
 * A command stopped by a signal (an operator's Ctrl-C) once it has let go of what it held: main
 * prints it and exits with `exitCode` (128 + the signal's number, as a shell reports it) without
 * waiting for the work it abandoned, which may still hold connections open.
 */
export class CommandInterrupted extends Error {
  override readonly name = 'CommandInterrupted';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}
