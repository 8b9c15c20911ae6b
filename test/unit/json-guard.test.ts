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
});
