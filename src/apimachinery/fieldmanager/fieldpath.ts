/**
 * Field sets and their `FieldsV1` wire encoding, after sigs.k8s.io/structured-merge-diff/v4
 * `fieldpath` (set.go, path.go, element.go, serialize.go, serialize-pe.go).
 *
 * A set is a trie: at every level `members` are the path elements owned as nodes/leaves and
 * `children` the sub-sets below a path element. The two are independent, exactly as in SMD: a
 * path element may be a member, have children, or both (`"."` in FieldsV1).
 *
 * Path elements:
 * - `{field}`: a struct field or map key — `f:<name>`, printed `.name`;
 * - `{key}`: an item of a list-map, identified by its key fields (sorted by name) —
 *   `k:{"name":"nginx"}`, printed `[name="nginx"]`;
 * - `{value}`: an item of a set list — `v:"a"`, printed `[="a"]`;
 * - `{index}`: an item of a positional list — `i:0`, printed `[0]` (never produced here, since
 *   atomic lists are leaves, but parsed for completeness).
 */

/** One step of a field path (SMD `fieldpath.PathElement`). */
export type PathElement =
  | { field: string }
  | { key: Array<[string, unknown]> }
  | { value: unknown }
  | { index: number };

/** A field path (SMD `fieldpath.Path`). */
export type Path = PathElement[];

// ---------------------------------------------------------------------------------------------
// Values: canonical JSON, ordering and printing (SMD `value.Compare`, `value.ToString`)
// ---------------------------------------------------------------------------------------------

/** JSON with object keys sorted, so equal values serialise identically. */
export function canonicalJSON(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return `[${v.map(canonicalJSON).join(',')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort(compareStrings).map((k) => `${JSON.stringify(k)}:${canonicalJSON(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Byte-order string comparison (Go `strings.Compare` for BMP text). */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function valueRank(v: unknown): number {
  if (typeof v === 'number') return 0;
  if (typeof v === 'string') return 1;
  if (typeof v === 'boolean') return 2;
  if (Array.isArray(v)) return 3;
  if (v !== null && typeof v === 'object') return 4;
  return 5; // null sorts last, as in SMD value.Compare
}

/** Total order over JSON values as SMD `value.Compare`: numbers < strings < bools < lists < maps < null. */
export function compareValues(a: unknown, b: unknown): number {
  const ra = valueRank(a);
  const rb = valueRank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 0: return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 1: return compareStrings(a as string, b as string);
    case 2: return a === b ? 0 : a ? 1 : -1;
    case 3: {
      const la = a as unknown[];
      const lb = b as unknown[];
      for (let i = 0; i < Math.min(la.length, lb.length); i++) {
        const c = compareValues(la[i], lb[i]);
        if (c !== 0) return c;
      }
      return la.length - lb.length;
    }
    case 4: {
      const ma = a as Record<string, unknown>;
      const mb = b as Record<string, unknown>;
      const ka = Object.keys(ma).sort(compareStrings);
      const kb = Object.keys(mb).sort(compareStrings);
      for (let i = 0; i < Math.min(ka.length, kb.length); i++) {
        const c = compareStrings(ka[i]!, kb[i]!) || compareValues(ma[ka[i]!], mb[kb[i]!]);
        if (c !== 0) return c;
      }
      return ka.length - kb.length;
    }
    default: return 0;
  }
}

/** Deep equality of JSON values. */
export function valuesEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => valuesEqual(x, bb[i]));
  }
  const ma = a as Record<string, unknown>;
  const mb = b as Record<string, unknown>;
  const ka = Object.keys(ma).filter((k) => ma[k] !== undefined);
  const kb = Object.keys(mb).filter((k) => mb[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(mb, k) && valuesEqual(ma[k], mb[k]));
}

/** SMD `value.ToString`: strings Go-quoted, lists `[a,b]`, maps `{k=v}`. */
function valueToString(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(valueToString).join(',')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort(compareStrings).map((k) => `${k}=${valueToString(o[k])}`).join(',')}}`;
  }
  return String(v);
}

// ---------------------------------------------------------------------------------------------
// Path elements
// ---------------------------------------------------------------------------------------------

/** The FieldsV1 key of a path element (SMD `SerializePathElement`): `f:`, `k:`, `v:` or `i:`. */
export function serializePathElement(pe: PathElement): string {
  if ('field' in pe) return `f:${pe.field}`;
  if ('key' in pe) return `k:{${pe.key.map(([n, v]) => `${JSON.stringify(n)}:${canonicalJSON(v)}`).join(',')}}`;
  if ('value' in pe) return `v:${canonicalJSON(pe.value)}`;
  return `i:${pe.index}`;
}

/** Parses one FieldsV1 key (SMD `DeserializePathElement`); throws on malformed input. */
export function parsePathElement(s: string): PathElement {
  const kind = s.slice(0, 2);
  const rest = s.slice(2);
  switch (kind) {
    case 'f:':
      return { field: rest };
    case 'k:': {
      const obj: unknown = JSON.parse(rest);
      if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new Error(`invalid key path element: ${s}`);
      const key = Object.entries(obj as Record<string, unknown>).sort((a, b) => compareStrings(a[0], b[0]));
      if (key.length === 0) throw new Error(`empty key path element: ${s}`);
      return { key };
    }
    case 'v:':
      return { value: JSON.parse(rest) as unknown };
    case 'i:': {
      if (!/^-?\d+$/.test(rest)) throw new Error(`invalid index path element: ${s}`);
      return { index: Number(rest) };
    }
    default:
      throw new Error(`unknown path element type: ${JSON.stringify(s)}`);
  }
}

/** SMD `PathElement.String`: `.name`, `[k=v,…]`, `[=v]`, `[i]`. */
export function pathElementString(pe: PathElement): string {
  if ('field' in pe) return `.${pe.field}`;
  if ('key' in pe) return `[${pe.key.map(([n, v]) => `${n}=${valueToString(v)}`).join(',')}]`;
  if ('value' in pe) return `[=${valueToString(pe.value)}]`;
  return `[${pe.index}]`;
}

/** A path as SMD prints it in conflict messages, e.g. `.spec.containers[name="nginx"].image`. */
export function pathString(path: Path): string {
  return path.map(pathElementString).join('');
}

/** FieldsV1 order of serialised elements: field keys (`f:`) compare as their names. */
function compareItems(a: { k: string; pe: PathElement }, b: { k: string; pe: PathElement }): number {
  if (a.k.charCodeAt(0) === 102 && b.k.charCodeAt(0) === 102) return compareStrings(a.k, b.k); // both 'f:'
  return comparePathElements(a.pe, b.pe);
}

function peRank(pe: PathElement): number {
  return 'field' in pe ? 0 : 'key' in pe ? 1 : 'value' in pe ? 2 : 3;
}

/** SMD `PathElement.Compare`: fields < keys < values < indexes, then by content. */
export function comparePathElements(a: PathElement, b: PathElement): number {
  const r = peRank(a) - peRank(b);
  if (r !== 0) return r;
  if ('field' in a) return compareStrings(a.field, (b as { field: string }).field);
  if ('key' in a) {
    const kb = (b as { key: Array<[string, unknown]> }).key;
    for (let i = 0; ; i++) {
      if (i >= a.key.length && i >= kb.length) return 0;
      if (i >= a.key.length) return -1;
      if (i >= kb.length) return 1;
      const c = compareStrings(a.key[i]![0], kb[i]![0]) || compareValues(a.key[i]![1], kb[i]![1]);
      if (c !== 0) return c;
    }
  }
  if ('value' in a) return compareValues(a.value, (b as { value: unknown }).value);
  return a.index - (b as { index: number }).index;
}

// ---------------------------------------------------------------------------------------------
// Sets
// ---------------------------------------------------------------------------------------------

/**
 * A set of field paths (SMD `fieldpath.Set`). Mutating methods (`insert`, `child`) are for
 * building a set; once built a set is not changed again, so set algebra returns new sets that
 * share unchanged subtrees with their inputs.
 */
export class FieldSet {
  /** Path elements owned at this level, keyed by their FieldsV1 serialisation. */
  readonly members = new Map<string, PathElement>();
  /** Sub-sets below a path element, keyed by its FieldsV1 serialisation. */
  readonly children = new Map<string, { pe: PathElement; set: FieldSet }>();
  /** The FieldsV1 this set was read from, when the caller vouched for it being canonical. */
  private encoded: Record<string, unknown> | undefined;

  /** A set holding `paths`. */
  static of(...paths: Path[]): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  /** Adds a path (the empty path is ignored, as the root is never a member). */
  insert(path: Path): this {
    if (path.length === 0) return this;
    this.encoded = undefined;
    let s: FieldSet = this;
    for (let i = 0; i < path.length - 1; i++) s = s.child(path[i]!);
    const last = path[path.length - 1]!;
    s.members.set(serializePathElement(last), last);
    return this;
  }

  /** The child set below `pe` (serialised: `k`), created when absent. */
  child(pe: PathElement, k = serializePathElement(pe)): FieldSet {
    this.encoded = undefined;
    let c = this.children.get(k);
    if (!c) {
      c = { pe, set: new FieldSet() };
      this.children.set(k, c);
    }
    return c.set;
  }

  /** Whether `path` is a member. */
  has(path: Path): boolean {
    if (path.length === 0) return false;
    let s: FieldSet | undefined = this;
    for (let i = 0; i < path.length - 1 && s; i++) s = s.children.get(serializePathElement(path[i]!))?.set;
    return !!s && s.members.has(serializePathElement(path[path.length - 1]!));
  }

  /** SMD `Set.WithPrefix`: the sub-set below `pe` (empty when none). */
  withPrefix(pe: PathElement): FieldSet {
    return this.children.get(serializePathElement(pe))?.set ?? new FieldSet();
  }

  /** Whether the set holds no path. */
  empty(): boolean {
    if (this.members.size) return false;
    for (const c of this.children.values()) if (!c.set.empty()) return false;
    return true;
  }

  /** Paths in either set. */
  union(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) out.members.set(k, pe);
    for (const [k, pe] of other.members) out.members.set(k, pe);
    const keys = new Set([...this.children.keys(), ...other.children.keys()]);
    for (const k of keys) {
      const a = this.children.get(k);
      const b = other.children.get(k);
      const set = a && b ? a.set.union(b.set) : (a ?? b)!.set;
      if (!set.empty()) out.children.set(k, { pe: (a ?? b)!.pe, set });
    }
    return out;
  }

  /** Paths in this set and not in `other` (SMD `Set.Difference`: not prefix-based). */
  difference(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (!other.members.has(k)) out.members.set(k, pe);
    for (const [k, a] of this.children) {
      const b = other.children.get(k);
      const set = b ? a.set.difference(b.set) : a.set;
      if (!set.empty()) out.children.set(k, { pe: a.pe, set });
    }
    return out;
  }

  /**
   * SMD `Set.RecursiveDifference` (what its `ExcludeSetFilter` of reset fields applies): the paths
   * of this set that are neither in `other` nor below a member of `other`.
   */
  recursiveDifference(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (!other.members.has(k)) out.members.set(k, pe);
    for (const [k, a] of this.children) {
      if (other.members.has(k)) continue;
      const b = other.children.get(k);
      const set = b ? a.set.recursiveDifference(b.set) : a.set;
      if (!set.empty()) out.children.set(k, { pe: a.pe, set });
    }
    return out;
  }

  /** Paths in both sets. */
  intersection(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (other.members.has(k)) out.members.set(k, pe);
    for (const [k, a] of this.children) {
      const b = other.children.get(k);
      if (!b) continue;
      const set = a.set.intersection(b.set);
      if (!set.empty()) out.children.set(k, { pe: a.pe, set });
    }
    return out;
  }

  /** Same paths. */
  equals(other: FieldSet): boolean {
    return this.difference(other).empty() && other.difference(this).empty();
  }

  /** Members sorted as SMD keeps them. */
  private sortedMembers(): PathElement[] {
    return [...this.members.values()].sort(comparePathElements);
  }

  /** Children sorted as SMD keeps them. */
  private sortedChildren(): Array<{ pe: PathElement; set: FieldSet }> {
    return [...this.children.values()].sort((a, b) => comparePathElements(a.pe, b.pe));
  }

  /** Every member path in SMD `Set.Iterate` order: this level's members, then each child's. */
  paths(prefix: Path = []): Path[] {
    const out: Path[] = [];
    for (const pe of this.sortedMembers()) out.push([...prefix, pe]);
    for (const c of this.sortedChildren()) out.push(...c.set.paths([...prefix, c.pe]));
    return out;
  }

  /** SMD `Set.Leaves`: member paths that have no member below them. */
  leaves(prefix: Path = []): Path[] {
    const out: Path[] = [];
    for (const pe of this.sortedMembers()) {
      const c = this.children.get(serializePathElement(pe));
      if (!c || c.set.empty()) out.push([...prefix, pe]);
    }
    for (const c of this.sortedChildren()) out.push(...c.set.leaves([...prefix, c.pe]));
    return out;
  }

  /**
   * The set as `metav1.FieldsV1` JSON (SMD `Set.ToJSON`). A set read with `canonical` returns
   * the object it was read from (callers must not modify it).
   */
  toFieldsV1(): Record<string, unknown> {
    return this.encoded ?? this.emit(false);
  }

  private emit(includeSelf: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (includeSelf) out['.'] = {};
    const items: Array<{ k: string; pe: PathElement; member: boolean; set?: FieldSet }> = [];
    for (const [k, pe] of this.members) {
      const c = this.children.get(k);
      items.push({ k, pe, member: true, set: c && !c.set.empty() ? c.set : undefined });
    }
    for (const [k, c] of this.children) {
      if (!this.members.has(k) && !c.set.empty()) items.push({ k, pe: c.pe, member: false, set: c.set });
    }
    items.sort(compareItems);
    for (const it of items) out[it.k] = it.set ? it.set.emit(it.member) : {};
    return out;
  }

  /**
   * Parses `metav1.FieldsV1` JSON (SMD `Set.FromJSON`); throws on malformed input. With
   * `canonical` (JSON this code encoded, e.g. the stored object's managedFields) `toFieldsV1`
   * returns `json` itself instead of encoding the set again.
   */
  static fromFieldsV1(json: unknown, canonical = false): FieldSet {
    const s = new FieldSet();
    s.read(json);
    if (canonical) s.encoded = json as Record<string, unknown>;
    return s;
  }

  private read(json: unknown): void {
    if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new Error('FieldsV1 must be a JSON object');
    // Loops without Object.entries/keys: a ConfigMap's data may be 90,000 fields.
    const obj = json as Record<string, unknown>;
    for (const k in obj) {
      if (k === '.' || !Object.hasOwn(obj, k)) continue;
      const v = obj[k];
      const pe = parsePathElement(k);
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`FieldsV1 entry ${k} must be an object`);
      const body = v as Record<string, unknown>;
      let self = false;
      let below = false;
      for (const x in body) {
        if (!Object.hasOwn(body, x)) continue;
        if (x === '.') self = true; else below = true;
        if (self && below) break;
      }
      // A field's key is its own serialisation; other kinds are written canonically again.
      const key = k.charCodeAt(0) === 102 ? k : serializePathElement(pe);
      if (self || !below) this.members.set(key, pe);
      if (below) {
        const c = this.child(pe, key);
        c.read(body);
        if (c.empty()) this.children.delete(key);
      }
    }
  }
}
