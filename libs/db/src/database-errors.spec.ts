import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './database-errors.ts';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it('recognises a database that is down, restarting or gone mid-session', () => {
    expect(isDatabaseUnavailable(withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'))).toBe(true);
    expect(isDatabaseUnavailable(withCode('read ECONNRESET', 'ECONNRESET'))).toBe(true);
    expect(isDatabaseUnavailable(withCode('terminating connection due to administrator command', '57P01'))).toBe(true);
    expect(isDatabaseUnavailable(withCode('the database system is shutting down', '57P03'))).toBe(true);
    expect(isDatabaseUnavailable(withCode('connection failure', '08006'))).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(new Error('query failed', { cause: withCode('x', 'ECONNREFUSED') }))).toBe(true);
    // A server out of a resource for the moment: connection slots, disk, memory, others (dynamic shared memory).
    for (const code of ['53300', '53100', '53200', '53000']) expect(isDatabaseUnavailable(withCode('out of resources', code)), code).toBe(true);
  });

  it('leaves errors of the statement or its data alone', () => {
    expect(isDatabaseUnavailable(withCode('duplicate key value violates unique constraint', '23505'))).toBe(false);
    expect(isDatabaseUnavailable(withCode('relation "devices" does not exist', '42P01'))).toBe(false);
    // A configured limit the statement will hit again (temp_file_limit).
    expect(isDatabaseUnavailable(withCode('temporary file size exceeds temp_file_limit', '53400'))).toBe(false);
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    expect(isDatabaseUnavailable('not an error')).toBe(false);
  });
});
