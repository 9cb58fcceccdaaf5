/**
 * Content negotiation and body decoding, as kube-apiserver's
 * k8s.io/apiserver/pkg/endpoints/handlers/negotiation: JSON and YAML in and out, `as=Table` and
 * `as=PartialObjectMetadata[List]` transformations (meta.k8s.io v1/v1beta1), 406 for what cannot
 * be produced, 415 for bodies in an unsupported format.
 */
import { duplicateFields } from '../apimachinery/duplicatefields.js';
import { isMap, isScalar, isSeq, isPair, parseAllDocuments, type Node as YamlNode } from 'yaml';
import { StatusError, badRequest } from '../apimachinery/errors.js';
import { decodeKubernetesProtobuf, isKubernetesProtobuf } from '../apimachinery/protobuf.js';
import { jsonSyntaxError, summarizeBody } from '../apimachinery/jsonsyntax.js';
import { MAX_NESTING_DEPTH, MAX_YAML_TOKENS, jsonDeeperThan, tooDeep, valueDeeperThan, yamlTooComplex } from '../apimachinery/depth.js';

/** One parsed media range of an Accept header. */
interface MediaRange { type: string; subtype: string; params: Record<string, string> }

function parseMediaRanges(header: string): MediaRange[] {
  return header.split(',').map((part) => {
    const [mt, ...ps] = part.split(';').map((s) => s.trim());
    const [type = '', subtype = ''] = (mt ?? '').toLowerCase().split('/');
    const params: Record<string, string> = {};
    for (const p of ps) { const i = p.indexOf('='); if (i > 0) params[p.slice(0, i).trim()] = p.slice(i + 1).trim(); }
    return { type, subtype, params };
  }).filter((m) => m.type);
}

/** The chosen output: serialization and optional transformation. */
export interface OutputFormat {
  yaml: boolean;
  /** `Table`, `PartialObjectMetadata`, `PartialObjectMetadataList`, or undefined for the object itself. */
  as?: 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList';
  /** meta.k8s.io version asked for the transformation (`v1` or `v1beta1`). */
  asVersion: string;
  /** Aggregated discovery (`as=APIGroupDiscoveryList`) version, e.g. `v2`, `v2beta1`. */
  discovery?: string;
}

/**
 * Picks the first acceptable media range. `list` says whether the target is a list (which
 * decides PartialObjectMetadata vs PartialObjectMetadataList). `table` is false for endpoints
 * with no Table form (access reviews, token requests: kube's REST storages without a
 * TableConvertor), whose `as=Table` ranges are skipped. Throws 406 NotAcceptable.
 */
export function negotiateOutput(accept: string | undefined, list: boolean, allowDiscovery = false, table = true): OutputFormat {
  if (!accept) return { yaml: false, asVersion: 'v1' };
  for (const m of parseMediaRanges(accept)) {
    const json = m.subtype === 'json' && m.type === 'application';
    const yaml = m.type === 'application' && m.subtype === 'yaml';
    const any = (m.type === '*' && m.subtype === '*') || (m.type === 'application' && m.subtype === '*');
    if (!json && !yaml && !any) continue;
    const as = m.params.as;
    if (!as) return { yaml, asVersion: 'v1' };
    const g = m.params.g; const v = m.params.v;
    if (as === 'APIGroupDiscoveryList' && g === 'apidiscovery.k8s.io' && allowDiscovery && (v === 'v2' || v === 'v2beta1')) {
      return { yaml, asVersion: 'v1', discovery: v };
    }
    if (g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1')) continue;
    if (as === 'Table' && table) return { yaml, as, asVersion: v };
    if (as === 'PartialObjectMetadata' && !list) return { yaml, as, asVersion: v };
    if (as === 'PartialObjectMetadataList' && list) return { yaml, as, asVersion: v };
  }
  throw new StatusError(406, 'NotAcceptable', `only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io`);
}

/**
 * Decodes a JSON or YAML request body into a value. Throws 400 (malformed) or 415 (format).
 * A malformed body is reported as kube-apiserver does (handlers' transformDecodeError): `the
 * object provided is unrecognized (must be of type <kind>): couldn't get version/kind; json parse
 * error: <Go's encoding/json message> (<summary of the body>)`, or `error converting YAML to JSON:
 * yaml: line N: …` for YAML.
 *
 * @param expectedKind the kind the endpoint takes (`ConfigMap`, `DeleteOptions`), named in errors
 * @param duplicates when given, the paths of keys a JSON body repeats are appended to it (strict
 *   decoding; `JSON.parse` itself keeps the last value)
 */
export function decodeBody(contentType: string | undefined, body: Buffer | undefined, expectedKind: string, duplicates?: string[]): unknown {
  const data = body ?? Buffer.alloc(0);
  const ct = (contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  const unrecognized = (why: string) => badRequest(`the object provided is unrecognized (must be of type ${expectedKind}): ${why} (${summarizeBody(data)})`);
  if (ct === 'application/json' || ct === '' || ct === '*/*') {
    if (jsonDeeperThan(data)) throw unrecognized(`couldn't get version/kind; json parse error: exceeded max depth of ${MAX_NESTING_DEPTH}`);
    const text = data.toString('utf8');
    let value: unknown;
    try { value = JSON.parse(text); } catch {
      throw unrecognized(`couldn't get version/kind; json parse error: ${jsonSyntaxError(data) ?? 'invalid JSON'}`);
    }
    if (duplicates) duplicates.push(...duplicateFields(text));
    return value;
  }
  if (ct === 'application/yaml' || ct === 'application/x-yaml' || ct === 'text/yaml') {
    if (data.length === 0) throw unrecognized(`couldn't get version/kind; json parse error: unexpected end of JSON input`);
    try { return parseYamlDocument(data.toString('utf8')); } catch (err) {
      if (err instanceof YamlSyntaxError) throw unrecognized(err.message);
      throw err;
    }
  }
  // kubectl >= 1.32 sends typed-client bodies (create configmap, auth can-i, …) as protobuf.
  if (isKubernetesProtobuf(ct)) {
    if (data.length === 0) throw unrecognized('empty body');
    const obj = decodeKubernetesProtobuf(data);
    if (valueDeeperThan(obj)) throw tooDeep('protobuf');
    return obj;
  }
  throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf`);
}

/** A body that is not one YAML document; the message is kube's (`error converting YAML to JSON: yaml: …`). */
class YamlSyntaxError extends Error {}

/**
 * Parses one YAML document. Throws YamlSyntaxError with `error converting YAML to JSON: yaml:
 * line N: <reason>` (sigs.k8s.io/yaml's wording, as kube reports) for syntax errors, duplicate
 * keys, more than one document, nesting deeper than MAX_NESTING_DEPTH and alias bombs; 413 for
 * a YAML text over MAX_YAML_TOKENS tokens. A text that is JSON (what clients send) is parsed as
 * JSON, in linear time.
 */
function parseYamlDocument(text: string): unknown {
  const first = /\S/.exec(text)?.[0];
  if (first === '{' || first === '[') {
    const data = Buffer.from(text);
    if (jsonDeeperThan(data)) throw new YamlSyntaxError(`error converting YAML to JSON: yaml: exceeded max depth of ${MAX_NESTING_DEPTH}`);
    let value: unknown;
    try { value = JSON.parse(text); } catch { value = undefined; }
    if (value !== undefined) {
      const dup = duplicateFields(text)[0];
      if (dup !== undefined) throw new YamlSyntaxError(`error converting YAML to JSON: yaml: mapping key "${dup}" already defined`);
      return value;
    }
  }
  // The composer recurses per nesting level and spends microseconds per token: refuse deep or
  // huge texts before it runs (depth.ts).
  const complex = yamlTooComplex(text);
  if (complex === 'depth') throw new YamlSyntaxError(`error converting YAML to JSON: yaml: exceeded max depth of ${MAX_NESTING_DEPTH}`);
  if (complex === 'size') throw new StatusError(413, 'RequestEntityTooLarge', `the YAML body has more than ${MAX_YAML_TOKENS} tokens: send it as JSON`);
  // The library's uniqueKeys check is quadratic in a map's size: keys are checked below instead.
  const docs = parseAllDocuments(text, { uniqueKeys: false });
  if (!Array.isArray(docs)) return null; // empty input: YAML's null
  if (docs.length !== 1) throw new YamlSyntaxError(`error converting YAML to JSON: yaml: expected one document, found ${docs.length}`);
  const doc = docs[0]!;
  const error = doc.errors[0];
  if (error) {
    // The yaml library's message ends with " at line L, column C:" and a code frame.
    const reason = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    const line = error.linePos?.[0]?.line;
    throw new YamlSyntaxError(`error converting YAML to JSON: yaml: ${line ? `line ${line}: ` : ''}${reason}`);
  }
  const dupAt = duplicateYamlKey(doc.contents);
  if (dupAt !== undefined) {
    const line = text.slice(0, dupAt).split('\n').length;
    throw new YamlSyntaxError(`error converting YAML to JSON: yaml: line ${line}: Map keys must be unique`);
  }
  let value: unknown;
  // Aliases are resolved here: an alias bomb ("billion laughs") is refused by the library's alias
  // count (ReferenceError), and one that contains itself makes a cyclic value.
  try { value = doc.toJSON(); } catch (err) {
    throw new YamlSyntaxError(`error converting YAML to JSON: yaml: ${(err as Error).message.split('\n')[0]}`);
  }
  if (valueDeeperThan(value)) throw new YamlSyntaxError(`error converting YAML to JSON: yaml: exceeded max depth of ${MAX_NESTING_DEPTH} (or an alias that contains itself)`);
  return value;
}

/** Offset of the first key a YAML map repeats (scalar keys compared by value), or undefined; iterative, linear. */
function duplicateYamlKey(root: unknown): number | undefined {
  const stack: unknown[] = [root];
  while (stack.length) {
    const node = stack.pop();
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const item of node.items) {
        if (!isPair(item)) continue;
        const key = item.key as YamlNode | null;
        const id = isScalar(key) ? `${typeof key.value}:${String(key.value)}` : key === null ? 'null' : undefined;
        if (id !== undefined) {
          if (seen.has(id)) return key?.range?.[0] ?? 0;
          seen.add(id);
        }
        stack.push(item.value);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) stack.push(item);
    }
  }
  return undefined;
}

/**
 * Decodes the body of a server-side apply patch (YAML or JSON, one document). Throws 400 `error
 * decoding YAML: …` as kube's apply patcher does.
 */
export function decodeApplyPatch(body: Buffer): unknown {
  try { return parseYamlDocument(body.toString('utf8')); } catch (err) {
    if (err instanceof YamlSyntaxError) throw badRequest(`error decoding YAML: ${err.message}`);
    throw err;
  }
}
