/**
 * Classification of the sig-api-machinery Conformance specs of Kubernetes' e2e suite (v1.34.4)
 * that `npm run conformance:upstream` runs (test/upstream/run.ts).
 *
 * - `NOT_APPLICABLE`: specs that need something a pod-less control plane does not serve. kcp is
 *   the reference: its built-in APIs are core/v1 Namespaces, ConfigMaps, Secrets, Events,
 *   LimitRanges, ResourceQuotas, ServiceAccounts and the admissionregistration, apiextensions,
 *   authentication, authorization, certificates, coordination, events, flowcontrol and rbac
 *   groups (kcp docs, "Built-in APIs"); workload, node, network and storage APIs (Pods,
 *   PodTemplates, ReplicationControllers, Services, apps/*, batch/*, …) are not served, and kcp
 *   does not aggregate (no kube-aggregator, so no apiregistration.k8s.io APIServices). Neither
 *   does kcp-ts. Each entry names the spec exactly as Ginkgo reports it and says what it needs.
 * - `CRASHES_THE_SUITE`: not-applicable specs whose setup fails inside goroutines without
 *   GinkgoRecover, which panics the whole e2e.test process; the runner skips them by name.
 * - `KNOWN_FAILURES`: applicable specs that fail today, each with the cause found (what kcp-ts
 *   does differently, and where). The runner fails when an applicable spec fails without an entry
 *   here, or when an entry's spec passes (the entry is stale).
 */

/** What a not-applicable spec needs that kcp (and kcp-ts) does not serve. */
export type Missing =
  | 'Pods' | 'PodTemplates' | 'ReplicationControllers' | 'Services' | 'Deployments' | 'ReplicaSets'
  | 'APIService aggregation' | "kube's workload, network, storage and scheduling API groups";

/** One spec that cannot apply. */
export interface NotApplicable {
  /** Full spec text as in the JUnit report (without `[It] `). */
  spec: string;
  needs: Missing[];
  /** Why, with the upstream file that shows it. */
  reason: string;
}

const AM = '[sig-api-machinery]';
const WEBHOOK = `${AM} AdmissionWebhook [Privileged:ClusterAdmin]`;

/** The admission webhook specs: all share one BeforeEach (webhook.go) that deploys the webhook server. */
const WEBHOOK_SPECS = [
  'listing mutating webhooks should work',
  'listing validating webhooks should work',
  'patching/updating a mutating webhook should work',
  'patching/updating a validating webhook should work',
  'should be able to create and update mutating webhook configurations with match conditions',
  'should be able to create and update validating webhook configurations with match conditions',
  'should be able to deny attaching pod',
  'should be able to deny custom resource creation, update and deletion',
  'should be able to deny pod and configmap creation',
  'should deny crd creation',
  'should honor timeout',
  'should include webhook resources in discovery documents',
  'should mutate configmap',
  'should mutate custom resource',
  'should mutate custom resource with different stored version',
  'should mutate custom resource with pruning',
  "should mutate everything except 'skip-me' configmaps",
  'should mutate pod and apply defaults after mutation',
  'should not be able to mutate or prevent deletion of webhook configuration objects',
  'should reject mutating webhook configurations with invalid match conditions',
  'should reject validating webhook configurations with invalid match conditions',
  'should unconditionally reject operations on fail closed webhook',
];

const WEBHOOK_BACKEND = 'its setup (webhook.go BeforeEach, deployWebhookAndService) runs the webhook server as a Deployment ' +
  'of the agnhost image behind a Service and waits for it to be available; the webhook configurations name that Service. ' +
  "The same behaviours run against kcp-ts with a url webhook in the project's own port (test/conformance/admission.ts)";
const CONVERSION_BACKEND = 'its setup (crd_conversion_webhook.go, deployCustomResourceWebhookAndService) runs the conversion webhook ' +
  'as a Deployment behind a Service and the CRD names that Service';
const KUBE_GROUPS = 'it requires resources of API groups only a full Kubernetes serves';

export const NOT_APPLICABLE: NotApplicable[] = [
  ...WEBHOOK_SPECS.map((it): NotApplicable => ({ spec: `${WEBHOOK} ${it} [Conformance]`, needs: ['Deployments', 'Services'], reason: WEBHOOK_BACKEND })),
  { spec: `${AM} CustomResourceConversionWebhook [Privileged:ClusterAdmin] should be able to convert a non homogeneous list of CRs [Conformance]`, needs: ['Deployments', 'Services'], reason: CONVERSION_BACKEND },
  { spec: `${AM} CustomResourceConversionWebhook [Privileged:ClusterAdmin] should be able to convert from CR v1 to CR v2 [Conformance]`, needs: ['Deployments', 'Services'], reason: CONVERSION_BACKEND },
  {
    spec: `${AM} CustomResourceFieldSelectors [Privileged:ClusterAdmin] CustomResourceFieldSelectors MUST list and watch custom resources matching the field selector [Conformance]`,
    needs: ['Deployments', 'Services'],
    reason: `${CONVERSION_BACKEND} (crd_selectable_fields.go BeforeEach); its CRD has two versions converted by that webhook`,
  },
  {
    spec: `${AM} Aggregator Should be able to support the 1.17 Sample API Server using the current Aggregator [Conformance]`,
    needs: ['APIService aggregation', 'Deployments', 'Services'],
    reason: 'it deploys the sample-apiserver as a Deployment behind a Service and registers it with an apiregistration.k8s.io/v1 APIService (aggregator.go); kcp has no aggregation layer',
  },
  {
    spec: `${AM} AggregatedDiscovery should support aggregated discovery interface [Conformance]`,
    needs: ['APIService aggregation', "kube's workload, network, storage and scheduling API groups"],
    reason: `${KUBE_GROUPS}: aggregated_discovery.go's expected list includes apiregistration.k8s.io/v1 apiservices, apps/v1 deployments, autoscaling, batch, discovery.k8s.io, networking.k8s.io, node.k8s.io, policy, scheduling.k8s.io and storage.k8s.io. The same spec for CRDs applies (and runs)`,
  },
  {
    spec: `${AM} AggregatedDiscovery should support raw aggregated discovery endpoint Accept headers [Conformance]`,
    needs: ['APIService aggregation', "kube's workload, network, storage and scheduling API groups"],
    reason: `${KUBE_GROUPS}: the same expected list as the aggregated discovery interface spec (aggregated_discovery.go). The same spec for CRDs applies (and runs)`,
  },
  {
    spec: `${AM} Discovery should locate the groupVersion and a resource within each APIGroup [Conformance]`,
    needs: ['APIService aggregation', "kube's workload, network, storage and scheduling API groups"],
    reason: `${KUBE_GROUPS}: discovery.go looks up apiregistration.k8s.io/v1 apiservices, apps/v1 deployments, autoscaling, batch, discovery.k8s.io, networking.k8s.io, node.k8s.io, policy, scheduling.k8s.io and storage.k8s.io`,
  },
  {
    spec: `${AM} FieldValidation should detect unknown and duplicate fields of a typed object [Conformance]`,
    needs: ['Deployments'],
    reason: 'its typed object is an apps/v1 Deployment (field_validation.go); the same field validation on a served kind is in the project\'s own port',
  },
  {
    spec: `${AM} FieldValidation should detect unknown metadata fields of a typed object [Conformance]`,
    needs: ['Deployments'],
    reason: 'its typed object is an apps/v1 Deployment (field_validation.go)',
  },
  {
    spec: `${AM} ValidatingAdmissionPolicy [Privileged:ClusterAdmin] should validate against a Deployment [Conformance]`,
    needs: ['Deployments'],
    reason: 'the policy matches apps/v1 deployments and the spec creates Deployments to be admitted or denied (validatingadmissionpolicy.go)',
  },
  {
    spec: `${AM} ValidatingAdmissionPolicy [Privileged:ClusterAdmin] should allow expressions to refer variables. [Conformance]`,
    needs: ['Deployments'],
    reason: 'the policy matches apps/v1 deployments and the spec creates Deployments (validatingadmissionpolicy.go)',
  },
  { spec: `${AM} Garbage collector should delete RS created by deployment when not orphaning [Conformance]`, needs: ['Deployments', 'ReplicaSets'], reason: 'it deletes a Deployment and waits for the deployment controller\'s ReplicaSet to go (garbage_collector.go); kcp-ts\'s garbage collector is covered by the project\'s own port with ConfigMaps' },
  { spec: `${AM} Garbage collector should orphan RS created by deployment when deleteOptions.PropagationPolicy is Orphan [Conformance]`, needs: ['Deployments', 'ReplicaSets'], reason: 'it needs the deployment controller\'s ReplicaSet (garbage_collector.go)' },
  { spec: `${AM} Garbage collector should delete pods created by rc when not orphaning [Conformance]`, needs: ['ReplicationControllers', 'Pods'], reason: 'it needs the replication controller to create Pods (garbage_collector.go)' },
  { spec: `${AM} Garbage collector should orphan pods created by rc if delete options say so [Serial] [Conformance]`, needs: ['ReplicationControllers', 'Pods'], reason: 'it needs the replication controller to create Pods (garbage_collector.go)' },
  { spec: `${AM} Garbage collector should keep the rc around until all its pods are deleted if the deleteOptions says so [Serial] [Conformance]`, needs: ['ReplicationControllers', 'Pods'], reason: 'it needs the replication controller to create Pods (garbage_collector.go)' },
  { spec: `${AM} Garbage collector should not delete dependents that have both valid owner and owner that's waiting for dependents to be deleted [Serial] [Conformance]`, needs: ['ReplicationControllers', 'Pods'], reason: 'its owners are ReplicationControllers and its dependents their Pods (garbage_collector.go)' },
  { spec: `${AM} Garbage collector should not be blocked by dependency circle [Conformance]`, needs: ['Pods'], reason: 'its owner circle is made of Pods (garbage_collector.go)' },
  { spec: `${AM} Namespaces [Serial] should ensure that all pods are removed when a namespace is deleted [Conformance]`, needs: ['Pods'], reason: 'it creates a Pod in the namespace it deletes (namespace.go)' },
  { spec: `${AM} Namespaces [Serial] should ensure that all services are removed when a namespace is deleted [Conformance]`, needs: ['Services'], reason: 'it creates a Service in the namespace it deletes (namespace.go)' },
  { spec: `${AM} OrderedNamespaceDeletion namespace deletion should delete pod first [Conformance]`, needs: ['Pods'], reason: 'it checks that Pods are deleted before the other objects of a namespace (namespace.go)' },
  { spec: `${AM} ResourceQuota should create a ResourceQuota and capture the life of a pod. [Conformance]`, needs: ['Pods'], reason: 'it counts Pods and their requests (resource_quota.go)' },
  { spec: `${AM} ResourceQuota should create a ResourceQuota and capture the life of a replica set. [Conformance]`, needs: ['ReplicaSets'], reason: 'it counts apps/v1 ReplicaSets (resource_quota.go)' },
  { spec: `${AM} ResourceQuota should create a ResourceQuota and capture the life of a replication controller. [Conformance]`, needs: ['ReplicationControllers'], reason: 'it counts ReplicationControllers (resource_quota.go)' },
  { spec: `${AM} ResourceQuota should create a ResourceQuota and capture the life of a service. [Conformance]`, needs: ['Services'], reason: 'it counts Services, NodePorts and LoadBalancers (resource_quota.go)' },
  { spec: `${AM} ResourceQuota should verify ResourceQuota with best effort scope. [Conformance]`, needs: ['Pods'], reason: 'the BestEffort scope selects Pods by their QoS class (resource_quota.go)' },
  { spec: `${AM} ResourceQuota should verify ResourceQuota with terminating scopes. [Conformance]`, needs: ['Pods'], reason: 'the Terminating scopes select Pods by activeDeadlineSeconds (resource_quota.go)' },
  {
    spec: `${AM} Servers with support for API chunking should return chunks of results for list calls [Conformance]`,
    needs: ['PodTemplates'],
    reason: 'its setup creates 400 PodTemplates (chunking.go BeforeEach); the creates fail inside worker goroutines without GinkgoRecover, which panics e2e.test, so the runner skips it by name. Paging is covered by the project\'s own port with ConfigMaps',
  },
  {
    spec: `${AM} Servers with support for API chunking should support continue listing from the last key if the original version has been compacted away, though the list is inconsistent [Slow] [Conformance]`,
    needs: ['PodTemplates'],
    reason: 'the same setup as the chunking spec above (400 PodTemplates from goroutines; panics e2e.test), skipped by name. Expired continue tokens (410) are covered by the project\'s own port',
  },
];

/** Specs skipped by name because their setup crashes the e2e.test process (see each entry's reason). */
export const CRASHES_THE_SUITE: string[] = NOT_APPLICABLE.filter((n) => /panics e2e\.test/.test(n.reason)).map((n) => n.spec);

/** An applicable spec that fails today, with the cause. */
export interface KnownFailure {
  spec: string;
  /** What kcp-ts does differently from kube-apiserver, and where (file). */
  cause: string;
}

/** Applicable specs and the cause of their failure. Keep in step with the last run (the runner checks). */
export const KNOWN_FAILURES: KnownFailure[] = [];
