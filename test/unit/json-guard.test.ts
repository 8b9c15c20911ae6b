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

  it('finds a duplicate among many keys (past the short list) and reads strings holding quotes, braces and commas as strings', () => {
    const many = Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`).join(',');
    expect(checkJsonText(`{${many}}`)).toBeNull();
    expect(checkJsonText(`{${many},"k3":0}`)).toMatchObject({ path: '$.k3', code: 'duplicate_key' });
    expect(checkJsonText(`{${many},"k39":0}`)).toMatchObject({ path: '$.k39', code: 'duplicate_key' });
    const tricky = String.raw`{"a":"x\",\"a\":{","b":"}],[{\\","c":"\\\\","d":{"a":1}}`;
    expect(JSON.parse(tricky)).toEqual({ a: 'x","a":{', b: '}],[{\\', c: '\\\\', d: { a: 1 } });
    expect(checkJsonText(tricky)).toBeNull();
    expect(checkJsonText(String.raw`{"u":"https://x.test/?a=1,b={2}","t":"\"","t":1}`)).toMatchObject({ path: '$.t', code: 'duplicate_key' });
    expect(checkJsonText(String.raw`{"p":{"a":"\\u0000"},"q":"\\\\u0000"}`)).toBeNull();
    expect(checkJsonText(String.raw`{"p":"plain","q":"after \u0000"}`)).toMatchObject({ path: '$.q', code: 'invalid_string' });
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

  it('steps over short integers without losing its place: the numbers after them are still checked and named', () => {
    expect(checkJsonText('{"n":999999999999999,"m":-999999999999999,"o":1000000000000000,"p":[0,-0,7]}')).toBeNull();
    expect(checkJsonText('{"a":[1,22,-333,12345678901234567890]}')).toMatchObject({ path: '$.a[3]', code: 'unrepresentable_number' });
    expect(checkJsonText('{"a":[1 , 99999999999999999]}')).toMatchObject({ path: '$.a[1]', code: 'unrepresentable_number' });
    expect(checkJsonText('{"a":12,"b":12E400}')).toMatchObject({ path: '$.b', code: 'unrepresentable_number' });
    expect(checkJsonText('{"a":12,"b":-12e400}')).toMatchObject({ path: '$.b', code: 'unrepresentable_number' });
    expect(checkJsonText('{"a":12,"b":3.5e-400}')).toMatchObject({ path: '$.b', code: 'unrepresentable_number' });
    expect(checkJsonText('{"a":1,"b":2,"a":3}')).toMatchObject({ path: '$.a', code: 'duplicate_key' });
  });
});
