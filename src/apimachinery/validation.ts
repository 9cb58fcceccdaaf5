/**
 * Name and metadata validation, as k8s.io/apimachinery/pkg/api/validation (ValidateObjectMeta)
 * and k8s.io/apimachinery/pkg/util/validation.
 */
import type { StatusCause } from './errors.js';
import type { ObjectMeta } from './meta.js';
import { validateLabelKey, validateLabelValue, validateQualifiedName } from './labels.js';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Kinds of name rules a resource applies to `metadata.name`. */
export type NameRule = 'dns1123Subdomain' | 'dns1123Label' | 'pathSegment';

/** Validates a name by a rule; returns error messages (empty = valid). */
export function validateName(name: string, rule: NameRule): string[] {
  switch (rule) {
    case 'dns1123Label':
      if (name.length > 63) return ['must be no more than 63 characters'];
      return DNS1123_LABEL.test(name) ? [] : ["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"];
    case 'dns1123Subdomain':
      if (name.length > 253) return ['must be no more than 253 characters'];
      return DNS1123_SUBDOMAIN.test(name) ? [] : ["a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"];
    case 'pathSegment':
      if (name === '.' || name === '..') return [`may not be '${name}'`];
      if (/[/%]/.test(name)) return [`may not contain '/' or '%'`];
      return [];
  }
}

/** Total size limit of annotations: 256 KiB (apimachinery TotalAnnotationSizeLimitB). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/**
 * Validates object metadata. `namespaced` says whether `metadata.namespace` is required.
 * Returns field causes (`metadata.name`, `metadata.labels`, …).
 */
export function validateObjectMeta(meta: ObjectMeta, namespaced: boolean, nameRule: NameRule): StatusCause[] {
  const causes: StatusCause[] = [];
  const add = (field: string, message: string, reason = 'FieldValueInvalid') => causes.push({ reason, message, field });
  // JSON decoding into Go types rejects these in kube-apiserver; here they must be checked.
  for (const f of ['name', 'generateName', 'namespace', 'uid', 'resourceVersion'] as const) {
    if (meta[f] !== undefined && typeof meta[f] !== 'string') {
      causes.push({ reason: 'FieldValueInvalid', field: `metadata.${f}`, message: `Invalid value: ${JSON.stringify(meta[f])}: must be a string` });
      return causes;
    }
  }
  if (!meta.name) {
    add('metadata.name', 'name or generateName is required', 'FieldValueRequired');
  } else {
    for (const m of validateName(meta.name, nameRule)) add('metadata.name', `Invalid value: "${meta.name}": ${m}`);
  }
  if (namespaced) {
    if (!meta.namespace) add('metadata.namespace', 'Required value', 'FieldValueRequired');
  } else if (meta.namespace) {
    add('metadata.namespace', 'Forbidden: not allowed on this type', 'FieldValueForbidden');
  }
  if (meta.labels !== undefined) {
    if (typeof meta.labels !== 'object' || meta.labels === null || Array.isArray(meta.labels)) add('metadata.labels', 'must be a map of strings');
    else for (const [k, v] of Object.entries(meta.labels)) {
      const ke = validateLabelKey(k);
      if (ke) add('metadata.labels', `Invalid value: "${k}": ${ke}`);
      if (typeof v !== 'string') add(`metadata.labels`, `Invalid value: ${JSON.stringify(v)}: must be a string`);
      else { const ve = validateLabelValue(v); if (ve) add('metadata.labels', `Invalid value: "${v}": ${ve}`); }
    }
  }
  if (meta.annotations !== undefined) {
    if (typeof meta.annotations !== 'object' || meta.annotations === null || Array.isArray(meta.annotations)) add('metadata.annotations', 'must be a map of strings');
    else {
      let size = 0;
      for (const [k, v] of Object.entries(meta.annotations)) {
        const ke = validateQualifiedName(k.toLowerCase());
        if (ke.length) add('metadata.annotations', `Invalid value: "${k}": ${ke.join('; ')}`);
        if (typeof v !== 'string') add('metadata.annotations', `Invalid value: ${JSON.stringify(v)}: must be a string`);
        size += k.length + (typeof v === 'string' ? v.length : 0);
      }
      if (size > TOTAL_ANNOTATION_SIZE_LIMIT) add('metadata.annotations', `Too long: must have at most ${TOTAL_ANNOTATION_SIZE_LIMIT} bytes`, 'FieldValueTooLong');
    }
  }
  if (meta.finalizers !== undefined) {
    if (!Array.isArray(meta.finalizers)) add('metadata.finalizers', 'must be a list of strings');
    else meta.finalizers.forEach((f, i) => {
      const e = typeof f === 'string' ? validateQualifiedName(f).join('; ') : 'must be a string';
      if (e) add(`metadata.finalizers[${i}]`, `Invalid value: ${JSON.stringify(f)}: ${e}`);
    });
  }
  if (meta.ownerReferences !== undefined) {
    if (!Array.isArray(meta.ownerReferences)) add('metadata.ownerReferences', 'must be a list');
    else meta.ownerReferences.forEach((o, i) => {
      for (const f of ['apiVersion', 'kind', 'name', 'uid'] as const) {
        if (!o || typeof o[f] !== 'string' || !o[f]) add(`metadata.ownerReferences[${i}].${f}`, 'Required value', 'FieldValueRequired');
      }
    });
  }
  return causes;
}
