import { describe, expect, it } from 'vitest';
import { checkJsonText } from '../../src/http/json-guard.js';

describe('checkJsonText', () => {
  it('accepts ordinary bodies, paired surrogates and repeated keys in different objects', () => {
    expect(checkJsonText('{"a":1,"b":{"a":[1,{"a":"x"}]},"s":"\\ud83d\\ude00 ☕ \\u0041 \\\\u0000"}')).toBeNull();
  });

  it('names the path of a nesting level past the limit', () => {
    expect(checkJsonText('{"a":[[1]]}', 3)).toBeNull();
    expect(checkJsonText('{"a":[[[1]]]}', 3)).toEqual({ path: '$.a[0][0]', code: 'too_deep', message: 'nested deeper than 3 levels' });
  });

  it('finds a duplicate key, also when one spelling is escaped', () => {
    expect(checkJsonText('{"type":"a","x":{"k":1,"k":2}}')).toMatchObject({ path: '$.x.k', code: 'duplicate_key' });
    expect(checkJsonText('{"type":"a","\\u0074ype":"b"}')).toMatchObject({ path: '$.type', code: 'duplicate_key' });
  });

  it('refuses __proto__ keys at any depth', () => {
    expect(checkJsonText('{"a":[{"__proto__":{}}]}')).toMatchObject({ path: '$.a[0].__proto__', code: 'forbidden_key' });
  });

  it('refuses U+0000 and unpaired surrogates in values and keys', () => {
    expect(checkJsonText('{"session_id":"a\\u0000"}')).toMatchObject({ path: '$.session_id', code: 'invalid_string' });
    expect(checkJsonText('{"a":["x","\\ud800x"]}')).toMatchObject({ path: '$.a[1]', code: 'invalid_string' });
    expect(checkJsonText('{"a":"\\udc00"}')).toMatchObject({ path: '$.a', code: 'invalid_string' });
    expect(checkJsonText('{"a":"\\ud800\\u0041"}')).toMatchObject({ code: 'invalid_string' });
    expect(checkJsonText('{"k\\u0000":1}')).toMatchObject({ code: 'invalid_string' });
  });

  it('refuses numbers that overflow, underflow or exceed the exact integer range, naming them', () => {
    expect(checkJsonText('{"p":{"x":1e400}}')).toMatchObject({ path: '$.p.x', code: 'unrepresentable_number' });
    expect(checkJsonText('{"y":-1e400}')).toMatchObject({ path: '$.y', code: 'unrepresentable_number' });
    expect(checkJsonText('{"a":[1,123456789012345678901234567890]}')).toMatchObject({ path: '$.a[1]', code: 'unrepresentable_number' });
    expect(checkJsonText('{"w":1e-400}')).toMatchObject({ path: '$.w', code: 'unrepresentable_number' });
    expect(checkJsonText('{"w":-0.5e-400}')).toMatchObject({ path: '$.w', code: 'unrepresentable_number' });
    expect(checkJsonText('{"n":9007199254740992}')).toMatchObject({ path: '$.n', code: 'unrepresentable_number' });
    expect(checkJsonText('{"n":-9007199254740992}')).toMatchObject({ path: '$.n', code: 'unrepresentable_number' });
  });

  it('keeps numbers a double holds: the safe integer range, zero spelt any way, ordinary floats, digits in strings', () => {
    expect(checkJsonText('{"a":9007199254740991,"b":-9007199254740991,"c":0,"d":-0,"e":0e-400,"f":0.000e5}')).toBeNull();
    expect(checkJsonText('{"g":1.5e300,"h":5e-324,"i":1.7976931348623157e308,"j":-2.5,"k":1E2}')).toBeNull();
    expect(checkJsonText('{"s":"123456789012345678901234567890","t":"1e400","u":[true,false,null]}')).toBeNull();
  });
});
