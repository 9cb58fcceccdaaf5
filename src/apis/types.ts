/**
 * Describes one served resource. The REST store, discovery, OpenAPI and Table output are all
 * generated from these descriptors, so adding a resource never adds CRUD code.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { StatusCause } from '../apimachinery/errors.js';
import type { NameRule } from '../apimachinery/validation.js';
import type { AsyncConverter } from '../apiextensions/conversion.js';

/** One column of `as=Table` output (`metav1.TableColumnDefinition`) plus how to compute its cell. */
export interface TableColumn {
  name: string;
  /** OpenAPI type of the cell: `string`, `integer`, `date`, … */
  type: string;
  format?: string;
  description?: string;
  /** 0 = shown by default; >0 only with `-o wide`. */
  priority: number;
  /** Computes the cell from the stored object. */
  cell: (obj: KubeObject) => unknown;
}

/**
 * What an update's request may change of the stored object, for one door (the main resource or
 * a subresource): kube's `PrepareForUpdate` of that door's strategy (k8s.io/kubernetes
 * pkg/registry/<group>/<kind>/strategy.go, apiextensions-apiserver pkg/registry). The written
 * object starts from `base` — the request's body, or the stored object — and the listed field
 * paths (dot-joined, e.g. `spec`, `status.conditions`) are then taken from the other one (a path
 * absent there is removed). System metadata (name, namespace, uid, creationTimestamp,
 * generation, deletion fields) is always the stored one.
 */
export type UpdateReset =
  | { base: 'request'; fromStored: string[]; metadata: MetadataReset }
  | { base: 'stored'; fromRequest: string[]; metadata: MetadataReset };

/**
 * What the request may change of `metadata`:
 * - `request`: labels, annotations, finalizers, ownerReferences… as sent (most of kube's status
 *   strategies: Namespace, ResourceQuota, CertificateSigningRequest, CRD);
 * - `resetForStatus`: labels, annotations, finalizers and ownerReferences kept as stored
 *   (`metav1.ResetObjectMetaForStatus`: ValidatingAdmissionPolicy's status);
 * - `stored`: all of it as stored but `managedFields` (FlowSchema and PriorityLevelConfiguration
 *   status, custom resources' status).
 */
export type MetadataReset = 'request' | 'resetForStatus' | 'stored';

/**
 * Strategy hooks of a resource, modelled on kube-apiserver's `rest.RESTCreateStrategy` /
 * `RESTUpdateStrategy` (k8s.io/apiserver/pkg/registry/rest).
 */
export interface ResourceStrategy {
  /**
   * kube's defaulting of the kind (`SetObjectDefaults_<Kind>` of k8s.io/kubernetes
   * pkg/apis/<group>/<version>/zz_generated.defaults.go, the `SetDefaults_*` of its defaults.go and
   * k8s.io/api's `+default` markers): fills unset fields of a written object in place. kube runs it
   * in the decoder, so the store calls it on every body it writes, whatever the path (create,
   * update, every patch type, server-side apply's merged result, subresource writes) and again on
   * what a mutating admission step returns. Must accept any shape: a field of the wrong type is
   * left for validation to refuse (never throw).
   */
  defaults?(obj: KubeObject): void;
  /** Clears fields a create must not set (e.g. `status` when the type has a status subresource). */
  prepareForCreate?(obj: KubeObject): void;
  /**
   * Carries over what `updateResets` cannot say for an update of the main resource (e.g. a
   * Namespace's `spec.finalizers`); runs after the main resource's reset.
   */
  prepareForUpdate?(obj: KubeObject, old: KubeObject): void;
  /**
   * The reset of each door an update comes through, by subresource (`''` the main resource,
   * `status`, `finalize`, `approval`…). Unset doors get the store's rule (`resetFor` in
   * src/registry/store.ts): the main resource of a kind with `/status` keeps `status` as stored;
   * `status` changes only `status` (custom resources' status strategy). For server-side apply the
   * main resource's `fromStored` paths are kube's `GetResetFields`: never owned by an applier.
   */
  updateResets?: Record<string, UpdateReset>;
  /** Type-specific validation on create; returns causes (empty = valid). */
  validate?(obj: KubeObject): StatusCause[];
  /** Type-specific validation on update. */
  validateUpdate?(obj: KubeObject, old: KubeObject): StatusCause[];
  /**
   * Whether `metadata.generation` is maintained (1 on create, +1 on each spec change), as the
   * strategies of kube types with a spec/status split and all custom resources do.
   */
  tracksGeneration?: boolean;
  /** Rule for `metadata.name` (default `dns1123Subdomain`). */
  nameRule?: NameRule;
  /** Whether PUT of a missing object creates it (kube's `AllowCreateOnUpdate`; default false). */
  allowCreateOnUpdate?: boolean;
  /**
   * Whether a deletion must wait (besides `metadata.finalizers`), e.g. a Namespace whose
   * `spec.finalizers` are not empty.
   */
  deletionPending?(obj: KubeObject): boolean;
  /** Mutates an object whose deletion was just requested (e.g. Namespace phase `Terminating`). */
  prepareForDeletion?(obj: KubeObject): void;
  /**
   * Replaces the schema-based pruning of built-in kinds: prunes unknown fields and applies
   * defaults in place (custom resources: structural pruning and defaulting of their CRD schema);
   * returns the pruned paths for `fieldValidation`.
   */
  normalize?(obj: KubeObject): string[];
  /** Extra field-selector fields beyond metadata.name/metadata.namespace: name → value getter. */
  selectableFields?: Record<string, (obj: KubeObject) => string>;
}

/** Static description of a served resource. */
export interface ResourceDescriptor {
  group: string;
  version: string;
  kind: string;
  listKind: string;
  /** Plural lower-case resource name used in URLs. */
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  /** Verbs advertised in discovery. */
  verbs: string[];
  /** Whether `/status` is served. */
  hasStatus?: boolean;
  /**
   * Further subresources with their own kind and verbs, e.g. `serviceaccounts/token`
   * (`create`, authentication.k8s.io/v1 TokenRequest). Listed in discovery; the server routes each
   * by name (src/endpoints/handlers/create.ts).
   */
  extraSubresources?: { name: string; verbs: string[]; kind: { group: string; version: string; kind: string } }[];
  /** The `/scale` subresource (custom resources): where replicas and the selector live. */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  /**
   * Virtual resources (reviews) are create-only and never stored: `create` returns the computed
   * object.
   */
  virtual?: boolean;
  /**
   * OpenAPI v3 schema of the kind (a `components.schemas` entry). Used for `/openapi/v3`,
   * `/openapi/v2` and `kubectl explain`.
   */
  schema?: Record<string, unknown>;
  /**
   * Shared storage: objects live under another resource (its group and plural) in that
   * resource's version, converted on every read and write (as events.k8s.io/v1 Events are core
   * v1 Events in kube-apiserver). Conversions must be lossless in both directions.
   */
  storage?: {
    group: string;
    plural: string;
    toStorage(obj: KubeObject): KubeObject;
    fromStorage(obj: KubeObject): KubeObject;
    /**
     * Asynchronous, batched conversion (a CRD's conversion webhook), used instead of
     * toStorage/fromStorage: objects are written converted to `storageAPIVersion` and read
     * converted to the served version, whatever version they were stored in.
     */
    webhook?: { converter: AsyncConverter; storageAPIVersion: string };
  };
  /**
   * Defaulting on read: applies, in place, the defaults of the schema of the version an object
   * is stored in to an object as decoded from storage (before any conversion to the served
   * version); returns whether it set anything. kube's apiextensions-apiserver does this on every
   * decode from storage (customresource_handler.go: the storage codec's `unstructuredDefaulter`
   * runs `structuraldefaulting.Default` after the decoder's pruning), so a default added to a
   * CRD's schema later shows on objects stored before it. Undefined when no schema of the
   * resource has a default: stored objects are then served as they are. The store caches the
   * result per cached entry (registry/store.ts); nothing read is written back.
   */
  readDefaults?: (obj: KubeObject) => boolean;
  /**
   * Identity hash of the APIExport a bound resource comes from (APIBinding): objects are stored
   * under `<plural>:<identity>` (kcp's etcd layout for bound resources, docs "etcd structure"),
   * so two exports of the same group/resource never share storage, and a provider's wildcard
   * list over that storage sees only its own consumers' objects.
   */
  identity?: string;
  /** Extra Table columns after NAME (AGE is appended unless a column named Age exists). */
  columns?: TableColumn[];
  /** `columns` is the whole list (no Age column appended), as for CRD printer columns. */
  columnsComplete?: boolean;
  strategy?: ResourceStrategy;
  /**
   * Strategic-merge-patch metadata: field path (dot-joined, list items as their field name) →
   * `{ strategy, mergeKey }`. See apimachinery/strategicmerge.ts.
   */
  patchMeta?: Record<string, { strategy: string; mergeKey?: string }>;
}
