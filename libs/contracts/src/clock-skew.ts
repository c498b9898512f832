/**
 * How far apart Herald takes two hosts' clocks to be and still judges by them (5 minutes): how far
 * ahead of PostgreSQL's clock a reporter's event time may run and still be taken at its word
 * (libs/db's laterEventSql), and how far a door's clock (the client library's host, an API host)
 * may run ahead of the demuxer's before a job it takes as expired at acceptance is refused
 * (expiredWhenAccepted). Here, where the contracts and libs/db both read it.
 */
export const CLOCK_SKEW_ALLOWANCE_MS = 5 * 60_000;
