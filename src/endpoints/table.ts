/**
 * `as=Table` and PartialObjectMetadata output (meta.k8s.io `Table`, kube's server-side printing:
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-tables).
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor, TableColumn } from '../apis/types.js';
import { age } from '../apimachinery/duration.js';
import { badRequest } from '../apimachinery/errors.js';

const nameColumn = { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.', priority: 0 };
const ageColumn: TableColumn = { name: 'Age', type: 'string', priority: 0, description: 'CreationTimestamp is a timestamp representing the server time when this object was created.', cell: (o) => age(o.metadata.creationTimestamp) };

/** The columns of a resource: Name, its own columns, then Age (unless it has Age or Created At). */
export function tableColumns(desc: ResourceDescriptor): TableColumn[] {
  const own = (desc.columns ?? []).map((c) => (c.name === 'Age' ? ageColumn : c));
  const hasAge = desc.columnsComplete || own.some((c) => c.name === 'Age' || c.name === 'Created At');
  return hasAge ? own : [...own, ageColumn];
}

/** `includeObject` of a Table request: None, Metadata (default) or Object. */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** Parses `?includeObject=`; throws 400 for other values. */
export function parseIncludeObject(v: string | null): IncludeObject {
  if (v === null || v === '' || v === 'Metadata') return 'Metadata';
  if (v === 'None' || v === 'Object') return v;
  throw badRequest(`includeObject: Unsupported value: "${v}": supported values: "Metadata", "None", "Object"`);
}

/** The PartialObjectMetadata view of an object. */
export function partialObjectMetadata(obj: KubeObject, version: string): KubeObject {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: obj.metadata };
}

/** Builds a Table of objects. */
export function toTable(desc: ResourceDescriptor, objs: KubeObject[], listMeta: Record<string, unknown>, version: string, include: IncludeObject, withHeaders = true): Record<string, unknown> {
  const row = tableRows(desc, version, include);
  return { ...tableEnvelope(desc, listMeta, version, withHeaders), rows: objs.map(row) };
}

/** A Table without its `rows` (which come last): kind, apiVersion, metadata and the column definitions. */
export function tableEnvelope(desc: ResourceDescriptor, listMeta: Record<string, unknown>, version: string, withHeaders = true): Record<string, unknown> {
  const cols = tableColumns(desc);
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${version}`,
    metadata: listMeta,
    columnDefinitions: withHeaders ? [nameColumn, ...cols.map(({ cell: _c, ...def }) => ({ description: '', ...def }))] : [],
  };
}

/** The function making a Table row of an object: its cells, and the object as `include` asks. */
export function tableRows(desc: ResourceDescriptor, version: string, include: IncludeObject): (o: KubeObject) => Record<string, unknown> {
  const cols = tableColumns(desc);
  return (o) => {
    const row: Record<string, unknown> = { cells: [o.metadata.name, ...cols.map((c) => normalizeCell(c.cell(o)))] };
    if (include === 'Object') row.object = o;
    else if (include === 'Metadata') row.object = partialObjectMetadata(o, version);
    return row;
  };
}

function normalizeCell(v: unknown): unknown {
  return v === undefined || v === null ? '' : v;
}
