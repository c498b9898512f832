import { describe, expect, it } from 'vitest';
import { checkFields, enumOf, isInt32, isString, protoName, repeated, scalar } from './fcm-fields.ts';

const messageOf = (p: ReturnType<typeof checkFields>): string | undefined => p?.error.body.error.message;
const table = { name: scalar(isString, 'TYPE_STRING'), tags: repeated(scalar(isString, 'TYPE_STRING'), 'TYPE_STRING'), kind: enumOf('K', ['A', 'B']) };

describe('checkFields', () => {
  it('takes proto names and lowerCamelCase JSON names, and null as unset', () => {
    expect(protoName('notificationCount')).toBe('notification_count');
    expect(protoName('channel_id')).toBe('channel_id');
    expect(checkFields({ name: 'n', tags: ['a'], kind: 'B', }, 'm', table)).toBeUndefined();
    expect(checkFields({ name: null }, 'm', table)).toBeUndefined();
  });

  it('names unknown fields and bad values by path', () => {
    expect(messageOf(checkFields({ nope: 1 }, 'm', table))).toBe(`Invalid JSON payload received. Unknown name "nope" at 'm': Cannot find field.`);
    expect(messageOf(checkFields({ constructor: 1 }, 'm', table))).toMatch(/Unknown name "constructor"/);
    expect(messageOf(checkFields({ tags: ['a', 2] }, 'm', table))).toBe(`Invalid value at 'm.tags[1]' (TYPE_STRING), 2`);
    expect(messageOf(checkFields({ tags: 'a' }, 'm', table))).toBe(`Invalid value at 'm.tags' (TYPE_STRING), "a"`);
    expect(messageOf(checkFields({ kind: 'C' }, 'm', table))).toBe(`Invalid value at 'm.kind' (K), "C"`);
    expect(checkFields({ kind: 1 }, 'm', table)).toBeUndefined();
  });

  it('reads an int32 as a number or a decimal string', () => {
    expect([3, '3', -1, 2 ** 31 - 1].every(isInt32)).toBe(true);
    expect([1.5, '3x', 2 ** 31, true].some(isInt32)).toBe(false);
  });
});
