/**
 * String formats and regular expressions of CRD schemas, with Go semantics.
 *
 * - Formats: the set kube-apiserver validates for CRDs
 *   (k8s.io/apiextensions-apiserver/pkg/apiserver/validation/formats.go, 1.32: everything else is
 *   stripped and ignored), each checked as k8s.io/kube-openapi/pkg/validation/strfmt does. Format
 *   names are normalized by removing dashes (`date-time` ≡ `datetime`), as strfmt's registry does.
 *
 * `pattern` is a Go RE2 expression supplied by a tenant: it is compiled by RE2, never by a
 * backtracking `RegExp` (../apimachinery/regexp.ts). The fixed expressions below only check
 * formats; none of them can backtrack more than linearly on any input.
 */
import { isIP } from 'node:net';

type Check = (s: string) => boolean;

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID3 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID4 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const UUID5 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const HOSTNAME = /^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$/u;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/;
const CREDIT_CARD = /^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$/;
const ISBN10 = /^(?:[0-9]{9}X|[0-9]{10})$/;
const ISBN13 = /^(?:[0-9]{13})$/;
const HEXCOLOR = /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const RGB_PART = '(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|25[0-5])';
const RGBCOLOR = new RegExp(`^rgb\\(\\s*${RGB_PART}\\s*,\\s*${RGB_PART}\\s*,\\s*${RGB_PART}\\s*\\)$`);
const SSN = /^\d{3}[- ]?\d{2}[- ]?\d{4}$/;
const BSON_OBJECT_ID = /^[0-9a-fA-F]{24}$/;
const DATE_TIME_TAIL = /^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$/;

/** Go `time.Parse("2006-01-02", s)`: strict four-digit year, month 01–12, day valid for the month. */
export function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  if (mo < 1 || mo > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]!;
  return d <= days;
}

/** strfmt `IsDateTime`: a valid date, `t`, then `hh:mm:ss[.frac](z|±hh:mm)` (case-insensitive). */
export function isDateTime(str: string): boolean {
  if (str.length < 4) return false;
  const s = str.toLowerCase().split('t');
  if (s.length < 2 || !isDate(s[0]!)) return false;
  const m = DATE_TIME_TAIL.exec(s[1]!);
  if (!m) return false;
  return m[1]! <= '23' && m[2]! <= '59' && m[3]! <= '59';
}

const DURATION_UNITS: Array<[string[], number]> = [
  [['ns', 'nano'], 1e-9],
  [['us', 'µs', 'micro'], 1e-6],
  [['ms', 'milli'], 1e-3],
  [['s', 'sec'], 1],
  [['m', 'min'], 60],
  [['h', 'hr', 'hour'], 3600],
  [['d', 'day'], 86400],
  [['w', 'wk', 'week'], 604800],
];

// The durations are scanned by hand: as RegExps (`(\d+\.?\d*…)+`) they backtracked quadratically
// over a long run of digits in a tenant's value (20,000 digits: 1.4 s).

const GO_DURATION_UNITS: ReadonlyMap<string, number> = new Map([
  ['ns', 1e-9], ['us', 1e-6], ['µs', 1e-6], ['μs', 1e-6], ['ms', 1e-3], ['s', 1], ['m', 60], ['h', 3600],
]);

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/** Go `time.ParseDuration` syntax: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` or `0`. Returns seconds. */
export function parseGoDuration(s: string): number | undefined {
  if (s === '0' || s === '+0' || s === '-0') return 0;
  let i = s[0] === '-' || s[0] === '+' ? 1 : 0;
  const negative = s[0] === '-';
  if (i >= s.length) return undefined;
  let total = 0;
  while (i < s.length) {
    // A number: `\d+\.?\d*` or `\.\d+`.
    const start = i;
    while (isDigit(s[i])) i++;
    if (i > start) {
      if (s[i] === '.') i++;
      while (isDigit(s[i])) i++;
    } else {
      if (s[i] !== '.' || !isDigit(s[i + 1])) return undefined;
      i++;
      while (isDigit(s[i])) i++;
    }
    const value = Number(s.slice(start, i));
    // A unit: the two-character ones first (`1ms` is milliseconds, never minutes then `s`).
    const two = GO_DURATION_UNITS.get(s.slice(i, i + 2));
    const unit = two ?? GO_DURATION_UNITS.get(s.slice(i, i + 1));
    if (unit === undefined) return undefined;
    i += two !== undefined ? 2 : 1;
    total += value * unit;
  }
  return negative ? -total : total;
}

const isUnitLetter = (c: string | undefined): boolean => c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === 'µ');

/** strfmt `ParseDuration`: Go durations, or Scala-like `<n> <unit>` sequences (`3 days`). Seconds. */
export function parseStrfmtDuration(s: string): number | undefined {
  const go = parseGoDuration(s);
  if (go !== undefined) return go;
  let ok = false;
  let total = 0;
  // strfmt's `(\d+)\s*([A-Za-zµ]+)`, found left to right: a digit run, blanks, a run of letters.
  for (let i = 0; i < s.length;) {
    if (!isDigit(s[i])) { i++; continue; }
    const start = i;
    while (isDigit(s[i])) i++;
    const digitsEnd = i;
    while (i < s.length && /\s/.test(s[i]!)) i++;
    const unitStart = i;
    while (isUnitLetter(s[i])) i++;
    if (i === unitStart) { i = digitsEnd; continue; }
    const factor = Number(s.slice(start, digitsEnd));
    const unit = s.slice(unitStart, i).toLowerCase();
    for (const [variants, multiplier] of DURATION_UNITS) {
      const last = variants.length - 1;
      variants.forEach((variant, k) => {
        if ((k === last && unit.startsWith(variant)) || variant === unit) {
          ok = true;
          total += factor * multiplier;
        }
      });
    }
  }
  return ok ? total : undefined;
}

/** Go `net.ParseIP` for IPv4 dotted quads (sloppy: leading zeros allowed, as `ParseIPSloppy`). */
function parseIPv4Sloppy(s: string): boolean {
  const parts = s.split('.');
  if (parts.length !== 4) return false;
  return parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255);
}

/** Go `net.ParseIP` (sloppy IPv4 octets). */
function parseIP(s: string): boolean {
  if (parseIPv4Sloppy(s)) return true;
  if (!s.includes(':')) return false;
  if (s.includes('%')) return false;
  // An embedded IPv4 tail may have leading zeros in the sloppy parser: normalize it for isIP.
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    if (!parseIPv4Sloppy(tail)) return false;
    return isIP(`${s.slice(0, lastColon + 1)}${tail.split('.').map(Number).join('.')}`) === 6;
  }
  return isIP(s) === 6;
}

/** Go `net.ParseCIDR` (k8s.io/utils/net `ParseCIDRSloppy`). */
function isCIDR(s: string): boolean {
  const i = s.indexOf('/');
  if (i < 0) return false;
  const ip = s.slice(0, i);
  const bits = s.slice(i + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  const n = Number(bits);
  if (parseIPv4Sloppy(ip)) return n <= 32;
  return parseIP(ip) && n <= 128;
}

/** Go `net.ParseMAC`: 6, 8 or 20 octets as `aa:bb…`, `aa-bb…` or `aabb.ccdd…`. */
function isMAC(s: string): boolean {
  if (s.length < 14) return false;
  if (s[2] === ':' || s[2] === '-') {
    if ((s.length + 1) % 3 !== 0) return false;
    const n = (s.length + 1) / 3;
    if (n !== 6 && n !== 8 && n !== 20) return false;
    const sep = s[2]!;
    for (let i = 0; i < n; i++) {
      const part = s.slice(3 * i, 3 * i + 2);
      if (!/^[0-9a-fA-F]{2}$/.test(part)) return false;
      if (i < n - 1 && s[3 * i + 2] !== sep) return false;
    }
    return true;
  }
  if (s[4] === '.') {
    if ((s.length + 1) % 5 !== 0) return false;
    const n = ((s.length + 1) * 2) / 5;
    if (n !== 6 && n !== 8 && n !== 20) return false;
    for (let i = 0; i < n / 2; i++) {
      if (!/^[0-9a-fA-F]{4}$/.test(s.slice(5 * i, 5 * i + 4))) return false;
      if (i < n / 2 - 1 && s[5 * i + 4] !== '.') return false;
    }
    return true;
  }
  return false;
}

/** Go `url.ParseRequestURI`: an absolute URI (`scheme:…`) or an absolute path. */
function isRequestURI(s: string): boolean {
  if (s === '' || /[\x00-\x20\x7f]/.test(s)) return false;
  const hash = s.indexOf('#');
  const rest = hash >= 0 ? s.slice(0, hash) : s;
  if (rest.startsWith('/')) return !rest.startsWith('//') || rest.length > 2;
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$/.exec(rest);
  if (!m) return false;
  const after = m[2]!;
  if (after.startsWith('//')) {
    const authority = after.slice(2).split(/[/?]/)[0]!;
    const host = authority.includes('@') ? authority.slice(authority.lastIndexOf('@') + 1) : authority;
    if (host.startsWith('[')) return /^\[[0-9a-fA-F:.]+(%[^\]]*)?\](:\d*)?$/.test(host);
    const colon = host.lastIndexOf(':');
    if (colon >= 0 && !/^\d*$/.test(host.slice(colon + 1))) return false;
  }
  return true;
}

/** Go `net/mail.ParseAddress` (common forms: `a@b`, `Name <a@b>`). */
function isEmail(s: string): boolean {
  const angle = /^[^<>]*<([^<>]+)>\s*$/.exec(s);
  const addr = (angle ? angle[1]! : s).trim();
  return /^[^\s@()<>,;:\\"[\]]+@[^\s@()<>,;:\\"[\]]+$/.test(addr) && !addr.startsWith('.') && !addr.includes('..');
}

function isISBN(s: string, version: 10 | 13): boolean {
  const sanitized = s.replace(/[\s-]+/g, '');
  if (version === 10) {
    if (!ISBN10.test(sanitized)) return false;
    let checksum = 0;
    for (let i = 0; i < 9; i++) checksum += (i + 1) * (sanitized.charCodeAt(i) - 48);
    checksum += sanitized[9] === 'X' ? 100 : 10 * (sanitized.charCodeAt(9) - 48);
    return checksum % 11 === 0;
  }
  if (!ISBN13.test(sanitized)) return false;
  let checksum = 0;
  for (let i = 0; i < 12; i++) checksum += (i % 2 === 0 ? 1 : 3) * (sanitized.charCodeAt(i) - 48);
  return sanitized.charCodeAt(12) - 48 - ((10 - (checksum % 10)) % 10) === 0;
}

function isCreditCard(s: string): boolean {
  const sanitized = s.replace(/[^0-9]+/g, '');
  if (!CREDIT_CARD.test(sanitized)) return false;
  let sum = 0;
  let dbl = false;
  for (let i = sanitized.length - 1; i >= 0; i--) {
    let n = sanitized.charCodeAt(i) - 48;
    if (dbl) {
      n *= 2;
      sum += n >= 10 ? (n % 10) + 1 : n;
    } else sum += n;
    dbl = !dbl;
  }
  return sum % 10 === 0;
}

function isHostname(s: string): boolean {
  // The length first: it bounds the backtracking of HOSTNAME's nested repetitions.
  if (Buffer.byteLength(s) > 255 || !HOSTNAME.test(s)) return false;
  return s.split('.').every((p) => Buffer.byteLength(p) <= 63);
}

/**
 * String formats validated for CRDs in Kubernetes 1.32, by normalized name (dashes removed), with
 * strfmt's checks (k8s.io/kube-openapi/pkg/validation/strfmt default.go, date.go, time.go,
 * duration.go, bson.go).
 */
export const KUBE_FORMATS: ReadonlyMap<string, Check> = new Map<string, Check>([
  ['bsonobjectid', (s) => BSON_OBJECT_ID.test(s)],
  ['uri', isRequestURI],
  ['email', isEmail],
  ['hostname', isHostname],
  ['ipv4', (s) => parseIP(s) && s.includes('.')],
  ['ipv6', (s) => parseIP(s) && s.includes(':')],
  ['cidr', isCIDR],
  ['mac', isMAC],
  ['uuid', (s) => UUID.test(s)],
  ['uuid3', (s) => UUID3.test(s)],
  ['uuid4', (s) => UUID4.test(s)],
  ['uuid5', (s) => UUID5.test(s)],
  ['isbn', (s) => isISBN(s, 10) || isISBN(s, 13)],
  ['isbn10', (s) => isISBN(s, 10)],
  ['isbn13', (s) => isISBN(s, 13)],
  ['creditcard', isCreditCard],
  ['ssn', (s) => s.length === 11 && SSN.test(s)],
  ['hexcolor', (s) => HEXCOLOR.test(s)],
  ['rgbcolor', (s) => RGBCOLOR.test(s)],
  ['byte', (s) => BASE64.test(s)],
  ['password', () => true],
  ['date', isDate],
  ['duration', (s) => parseStrfmtDuration(s) !== undefined],
  ['datetime', isDateTime],
]);

/**
 * The format kube keeps for a schema of `type` (StripUnsupportedFormatsPostProcess): string
 * formats of {@link KUBE_FORMATS} for `string` or untyped schemas, `int32`/`int64` for integers,
 * `float`/`double` for numbers; anything else becomes `''` (ignored).
 */
export function effectiveFormat(type: string, format: string): string {
  if (!format) return '';
  switch (type) {
    case '':
    case 'string':
      return KUBE_FORMATS.has(format.replace(/-/g, '')) ? format : '';
    case 'integer':
      return format === 'int32' || format === 'int64' ? format : '';
    case 'number':
      return format === 'float' || format === 'double' ? format : '';
    default:
      return '';
  }
}
