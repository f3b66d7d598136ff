import { StorageError } from '@plover/core';
import { toStorageError } from '../src/errors';

function driverError(code: string): Error {
  return Object.assign(new Error(`driver failure ${code}`), { code });
}

describe('toStorageError', () => {
  it.each([
    ['08006', 'connection failure'],
    ['08001', 'unable to connect'],
    ['40001', 'serialization failure'],
    ['40P01', 'deadlock'],
    ['53300', 'too many connections'],
    ['53200', 'out of memory'],
    ['57P01', 'admin shutdown'],
    ['57P02', 'crash shutdown'],
    ['57P03', 'cannot connect now'],
    ['ECONNREFUSED', 'connection refused'],
    ['ECONNRESET', 'connection reset'],
    ['ETIMEDOUT', 'socket timeout'],
  ])('retries %s (%s), keeping the code', (code) => {
    expect(toStorageError(driverError(code), 'q')).toMatchObject({ retriable: true, code });
  });

  it.each([
    ['23505', 'unique violation'],
    ['23503', 'foreign key violation'],
    ['42601', 'syntax error'],
    ['42P01', 'undefined table'],
    ['22P02', 'invalid text representation'],
    ['25P02', 'in failed transaction'],
    ['57014', 'statement timeout'],
    ['28P01', 'wrong password'],
    ['3D000', 'unknown database'],
  ])('does not retry %s (%s)', (code) => {
    expect(toStorageError(driverError(code), 'q')).toMatchObject({ retriable: false, code });
  });

  it('lets a SQLSTATE decide even when the connection failed', () => {
    expect(toStorageError(driverError('28P01'), 'q', true).retriable).toBe(false);
  });

  it('retries an uncoded error only when the adapter saw the connection fail', () => {
    expect(toStorageError(new Error('Connection terminated unexpectedly'), 'q', true)).toMatchObject({ retriable: true, code: undefined });
    expect(toStorageError(new Error('Connection terminated unexpectedly'), 'q')).toMatchObject({ retriable: false, code: undefined });
  });

  it('names the query, keeps the cause and passes StorageErrors through', () => {
    const cause = driverError('23505');
    const wrapped = toStorageError(cause, 'persons.insert');
    expect(wrapped.message).toBe('persons.insert: driver failure 23505');
    expect(wrapped.cause).toBe(cause);
    expect(toStorageError(wrapped, 'other')).toBe(wrapped);
    expect(toStorageError(wrapped, 'other')).toBeInstanceOf(StorageError);
  });
});
