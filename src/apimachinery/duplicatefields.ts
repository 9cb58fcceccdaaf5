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
      let j = i + 1;
      let escaped = false;
      for (; j < n; j++) {
        const d = text.charCodeAt(j);
        if (d === BACKSLASH) { escaped = true; j++; continue; }
        if (d === QUOTE) break;
      }
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
