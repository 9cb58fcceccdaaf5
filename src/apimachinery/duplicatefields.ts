/**
 * Duplicate object keys in a JSON text — the "duplicate field" half of kube's strict decoding.
 *
 * `JSON.parse` keeps the last of two equal keys silently. kube-apiserver decodes request bodies
 * with sigs.k8s.io/json, which reports every repeated key as a strict decoding error
 * (`duplicate field "spec.replicas"`); `fieldValidation=Strict` turns those into a failed request,
 * `Warn` (the default) into `Warning` headers
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation).
 *
 * Paths use the format of the unknown-field paths (see pruning.ts): keys joined by `.`, list
 * indices as `[i]`. The scanner assumes the text is valid JSON (call it after `JSON.parse`
 * succeeded); it is a single linear pass that allocates a key set per object only.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

interface Frame {
  /** Key set of an object, undefined for an array. */
  keys?: Set<string>;
  /** The path of this container. */
  path: string;
  /** Current array index. */
  index: number;
  /** The key whose value is being read (objects). */
  key: string;
}

/** The index of the quote that closes the JSON string opened at `start`, and whether it holds escapes. */
function endOfString(text: string, start: number): { end: number; escaped: boolean } {
  let escaped = false;
  let j = start + 1;
  for (; j < text.length; j++) {
    const d = text.charCodeAt(j);
    if (d === BACKSLASH) { escaped = true; j++; continue; }
    if (d === QUOTE) break;
  }
  return { end: j, escaped };
}

/**
 * Returns the paths of repeated keys in `text`, in document order (empty when there are none).
 * @param text a valid JSON document.
 */
export function duplicateFields(text: string): string[] {
  const out: string[] = [];
  const stack: Frame[] = [];
  const n = text.length;
  let expectKey = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Read the string; decode escapes only when present.
      const { end: j, escaped } = endOfString(text, i);
      if (expectKey) {
        const raw = text.slice(i, j + 1);
        const key = escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        const top = stack[stack.length - 1]!;
        if (top.keys!.has(key)) out.push(join(top.path, key));
        else top.keys!.add(key);
        top.key = key;
        expectKey = false;
      }
      i = j;
    } else if (c === LBRACE || c === LBRACKET) {
      const parent = stack[stack.length - 1];
      const path = parent ? (parent.keys ? join(parent.path, parent.key) : `${parent.path}[${parent.index}]`) : '';
      stack.push(c === LBRACE ? { keys: new Set(), path, index: 0, key: '' } : { path, index: 0, key: '' });
      expectKey = c === LBRACE;
    } else if (c === RBRACE || c === RBRACKET) {
      stack.pop();
      expectKey = false;
    } else if (c === COMMA) {
      const top = stack[stack.length - 1]!;
      if (top.keys) expectKey = true;
      else top.index++;
    } else if (c === COLON) {
      expectKey = false;
    }
  }
  return out;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/**
 * The repeated keys of a JSON text as kube's strict YAML decoding of an apply body reports them
 * (sigs.k8s.io/yaml `YAMLToJSONStrict` → go-yaml v2 `UnmarshalStrict`, decode.go setMapIndex):
 * `line 9: key "foo" already set in map`, where the line (1-based) is that of the repeated key's
 * value, and a repeat is reported after whatever its value repeats (go-yaml decodes the value
 * first). At most `limit` reports (go-yaml reports all): each is some ten times the bytes of the
 * repeat it reports. `keyText` renders a key as Go's `%#v` does (a quoted string). The text must
 * be valid JSON (call after `JSON.parse`).
 */
export function duplicateKeyLines(text: string, keyText: (key: string) => string, limit = 100): string[] {
  const out: string[] = [];
  // One frame per open container: its key set (objects) and the report due when it closes.
  const stack: Array<{ keys?: Set<string>; due?: string }> = [];
  const n = text.length;
  let line = 1;
  let expectKey = false;
  let pending: string | undefined; // the report of a repeated key whose value has not started yet
  const valueStarts = (): string | undefined => {
    const due = pending === undefined ? undefined : `line ${line}: key ${keyText(pending)} already set in map`;
    pending = undefined;
    return due;
  };
  for (let i = 0; i < n && out.length < limit; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) { line++; continue; }
    if (c === 0x20 || c === 0x09 || c === 0x0d || c === COLON) continue;
    if (c === QUOTE) {
      const { end: j, escaped } = endOfString(text, i);
      if (expectKey) {
        const raw = text.slice(i, j + 1);
        const key = escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        const keys = stack[stack.length - 1]!.keys!;
        if (keys.has(key)) pending = key;
        else keys.add(key);
        expectKey = false;
      } else {
        const due = valueStarts();
        if (due) out.push(due);
      }
      i = j;
    } else if (c === LBRACE || c === LBRACKET) {
      const due = valueStarts();
      stack.push(c === LBRACE ? { keys: new Set(), due } : { due });
      expectKey = c === LBRACE;
    } else if (c === RBRACE || c === RBRACKET) {
      const due = stack.pop()?.due;
      if (due) out.push(due);
      expectKey = false;
    } else if (c === COMMA) {
      expectKey = stack[stack.length - 1]?.keys !== undefined;
    } else {
      // A number, true, false or null: report at its start, then skip it.
      const due = valueStarts();
      if (due) out.push(due);
      while (i + 1 < n && !/[\s,\]}]/.test(text[i + 1]!)) i++;
    }
  }
  return out.slice(0, limit);
}
