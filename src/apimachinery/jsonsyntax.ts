/**
 * Describes why a byte sequence is not JSON in the words kube-apiserver uses, which are those of
 * Go's encoding/json scanner (`invalid character 'o' in literal null (expecting 'u')`,
 * `unexpected end of JSON input`, …): clients and people reading a 400 see what they would see
 * from Kubernetes, never a JavaScript parser's message.
 *
 * Only the error path uses it (after JSON.parse failed), so it favours plainness over speed.
 * Source of the messages and states: Go's encoding/json/scanner.go (RFC 8259 grammar).
 */
import { badRequest } from './errors.js';
import { MAX_NESTING_DEPTH, jsonDeeperThan } from './depth.js';

/** Go's quoteChar: a byte in single quotes, escaped as strconv.Quote does. */
function quoteChar(c: number): string {
  if (c === 0x27) return `'\\''`;
  if (c === 0x22) return `'"'`;
  const named: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 0x5c: '\\\\' };
  if (named[c]) return `'${named[c]}'`;
  if (c < 0x20 || c === 0x7f) return `'\\x${c.toString(16).padStart(2, '0')}'`;
  if (c >= 0x80 && c < 0xa0) return `'\\u00${c.toString(16).padStart(2, '0')}'`;
  if (c === 0xad) return `'\\u00ad'`; // soft hyphen: not printable for Go
  return `'${String.fromCharCode(c)}'`;
}

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** Where the scanner is: what it expects next. */
type State =
  | 'beginValue' | 'beginValueOrEmpty' | 'beginStringOrEmpty' | 'beginString' | 'endValue' | 'endTop'
  | 'inString' | 'inStringEsc' | 'inStringEscU' | 'neg' | 'int' | 'zero' | 'dot' | 'dot0' | 'e' | 'eSign' | 'e0' | 'literal';

/**
 * The first syntax error of `data` as Go's encoding/json reports it, or undefined when `data` is
 * one valid JSON value (surrounded by whitespace at most).
 *
 * @param data the raw body bytes
 * @returns e.g. `invalid character '}' looking for beginning of object key string`
 */
export function jsonSyntaxError(data: Uint8Array): string | undefined {
  const stack: ('object' | 'key' | 'array')[] = [];
  let state: State = 'beginValue';
  let literal = '';
  let literalAt = 0;
  let hexLeft = 0;
  const invalid = (c: number, context: string) => `invalid character ${quoteChar(c)} ${context}`;

  /** Feeds one byte; returns an error message or undefined. */
  const step = (c: number): string | undefined => {
    for (;;) {
      switch (state) {
        case 'beginValueOrEmpty':
          if (isSpace(c)) return undefined;
          if (c === 0x5d) { stack.pop(); state = 'endValue'; return undefined; }
          state = 'beginValue';
          continue;
        case 'beginValue':
          if (isSpace(c)) return undefined;
          if (c === 0x7b) { stack.push('key'); state = 'beginStringOrEmpty'; return undefined; }
          if (c === 0x5b) { stack.push('array'); state = 'beginValueOrEmpty'; return undefined; }
          if (c === 0x22) { state = 'inString'; return undefined; }
          if (c === 0x2d) { state = 'neg'; return undefined; }
          if (c === 0x30) { state = 'zero'; return undefined; }
          if (c >= 0x31 && c <= 0x39) { state = 'int'; return undefined; }
          if (c === 0x74 || c === 0x66 || c === 0x6e) { literal = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null'; literalAt = 1; state = 'literal'; return undefined; }
          return invalid(c, 'looking for beginning of value');
        case 'beginStringOrEmpty':
          if (isSpace(c)) return undefined;
          if (c === 0x7d) { stack.pop(); state = 'endValue'; return undefined; }
          state = 'beginString';
          continue;
        case 'beginString':
          if (isSpace(c)) return undefined;
          if (c === 0x22) { state = 'inString'; return undefined; }
          return invalid(c, 'looking for beginning of object key string');
        case 'endValue': {
          const top = stack[stack.length - 1];
          if (top === undefined) { state = 'endTop'; continue; }
          if (isSpace(c)) return undefined;
          if (top === 'key') {
            if (c === 0x3a) { stack[stack.length - 1] = 'object'; state = 'beginValue'; return undefined; }
            return invalid(c, 'after object key');
          }
          if (top === 'object') {
            if (c === 0x2c) { stack[stack.length - 1] = 'key'; state = 'beginString'; return undefined; }
            if (c === 0x7d) { stack.pop(); return undefined; }
            return invalid(c, 'after object key:value pair');
          }
          if (c === 0x2c) { state = 'beginValue'; return undefined; }
          if (c === 0x5d) { stack.pop(); return undefined; }
          return invalid(c, 'after array element');
        }
        case 'endTop':
          return isSpace(c) ? undefined : invalid(c, 'after top-level value');
        case 'inString':
          if (c === 0x22) { state = 'endValue'; return undefined; }
          if (c === 0x5c) { state = 'inStringEsc'; return undefined; }
          if (c < 0x20) return invalid(c, 'in string literal');
          return undefined;
        case 'inStringEsc':
          if ([0x62, 0x66, 0x6e, 0x72, 0x74, 0x5c, 0x2f, 0x22].includes(c)) { state = 'inString'; return undefined; }
          if (c === 0x75) { state = 'inStringEscU'; hexLeft = 4; return undefined; }
          return invalid(c, 'in string escape code');
        case 'inStringEscU':
          if (!isHex(c)) return invalid(c, 'in \\u hexadecimal character escape');
          if (--hexLeft === 0) state = 'inString';
          return undefined;
        case 'neg':
          if (c === 0x30) { state = 'zero'; return undefined; }
          if (c >= 0x31 && c <= 0x39) { state = 'int'; return undefined; }
          return invalid(c, 'in numeric literal');
        case 'int':
          if (isDigit(c)) return undefined;
          state = 'zero';
          continue;
        case 'zero':
          if (c === 0x2e) { state = 'dot'; return undefined; }
          if (c === 0x65 || c === 0x45) { state = 'e'; return undefined; }
          state = 'endValue';
          continue;
        case 'dot':
          if (isDigit(c)) { state = 'dot0'; return undefined; }
          return invalid(c, 'after decimal point in numeric literal');
        case 'dot0':
          if (isDigit(c)) return undefined;
          if (c === 0x65 || c === 0x45) { state = 'e'; return undefined; }
          state = 'endValue';
          continue;
        case 'e':
          if (c === 0x2b || c === 0x2d) { state = 'eSign'; return undefined; }
          state = 'eSign';
          continue;
        case 'eSign':
          if (isDigit(c)) { state = 'e0'; return undefined; }
          return invalid(c, 'in exponent of numeric literal');
        case 'e0':
          if (isDigit(c)) return undefined;
          state = 'endValue';
          continue;
        case 'literal': {
          const want = literal.charCodeAt(literalAt);
          if (c !== want) return invalid(c, `in literal ${literal} (expecting ${quoteChar(want)})`);
          if (++literalAt === literal.length) state = 'endValue';
          return undefined;
        }
      }
    }
  };

  for (const c of data) {
    const err = step(c);
    if (err) return err;
  }
  // End of input: complete only after a whole top-level value (a number ends here too).
  if (stack.length === 0 && ['endValue', 'endTop', 'int', 'zero', 'dot0', 'e0'].includes(state)) return undefined;
  return 'unexpected end of JSON input';
}

/**
 * Parses a patch body (JSON patch, merge patch, strategic merge patch).
 *
 * @throws StatusError 400 BadRequest `error decoding patch: <Go's encoding/json message>`
 */
export function decodeJSONPatchBody(body: Buffer): unknown {
  if (jsonDeeperThan(body)) throw badRequest(`error decoding patch: exceeded max depth of ${MAX_NESTING_DEPTH}`);
  try { return JSON.parse(body.toString('utf8')); } catch {
    throw badRequest(`error decoding patch: ${jsonSyntaxError(body) ?? 'invalid JSON'}`);
  }
}

/**
 * kube-apiserver's summary of an undecodable body in error messages (handlers' summarizeData):
 * `<empty>`, the text when it starts with `{`, else its hex; cut at `maxLength` bytes with ` ...`.
 */
export function summarizeBody(data: Uint8Array, maxLength = 30): string {
  if (data.length === 0) return '<empty>';
  const cut = data.length > maxLength ? data.subarray(0, maxLength) : data;
  const text = data[0] === 0x7b ? Buffer.from(cut).toString('utf8') : Buffer.from(cut).toString('hex');
  return data.length > maxLength ? `${text} ...` : text;
}
