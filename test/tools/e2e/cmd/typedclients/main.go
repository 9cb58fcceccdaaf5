// Command typedclients checks a Kubernetes-compatible API server with client-go's stock typed
// clients, as any Go operator uses them: the apiextensions clientset
// (k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset) and the admissionregistration
// v1 and v1beta1 clients of k8s.io/client-go/kubernetes, left at their default content type.
// client-go v0.34's generated clients for built-in kinds prefer protobuf (gentype.PrefersProtobuf),
// so request bodies are protobuf and protobuf responses are asked for first.
//
// For a CustomResourceDefinition, a ValidatingAdmissionPolicy and its binding, a
// MutatingAdmissionPolicy and its binding (v1beta1) and a ValidatingWebhookConfiguration it
// starts a watch, then creates, gets, lists, updates (a label) and deletes the object, and checks
// that the watch saw ADDED, a MODIFIED carrying the label, and DELETED, each decoded as the typed
// object. Every response body the server sent for these requests must be protobuf, as
// kube-apiserver answers them (disable with --require-protobuf=false).
//
//	typedclients --kubeconfig FILE [--timeout 60s] [--require-protobuf=true] [--content-type application/json]
//
// --content-type overrides the clients' default (to tell a protobuf problem from another one);
// with it, responses are not required to be protobuf.
//
// Exits 0 when every check passed; otherwise prints the first mismatch and exits 1 (2 for bad
// usage).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const protobufMediaType = "application/vnd.kubernetes.protobuf"

// object is what every checked kind is: a typed runtime.Object with metadata.
type object interface {
	runtime.Object
	metav1.Object
}

// typedClient is the subset of a generated typed client (gentype.ClientWithList) the checks use.
type typedClient[T object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// contentTypes records the Content-Type of every response the server sent, per request line.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]string
}

// recording is the round tripper of one client transport; all of them share one contentTypes.
type recording struct {
	into *contentTypes
	next http.RoundTripper
}

func (r recording) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.next.RoundTrip(req)
	if err == nil {
		ct := res.Header.Get("Content-Type")
		r.into.mu.Lock()
		r.into.seen[req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery] = ct
		r.into.mu.Unlock()
	}
	return res, err
}

// notProtobuf lists the requests whose response carried a body in another media type.
func (c *contentTypes) notProtobuf() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for req, ct := range c.seen {
		if ct != "" && !strings.HasPrefix(ct, protobufMediaType) {
			out = append(out, fmt.Sprintf("%s -> %s", req, ct))
		}
	}
	sort.Strings(out)
	return out
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the server (its current context)")
	timeout := flag.Duration("timeout", 60*time.Second, "limit for all checks together")
	requireProtobuf := flag.Bool("require-protobuf", true, "fail when a response body is not protobuf")
	contentType := flag.String("content-type", "", "content type instead of the clients' default (protobuf); for diagnosis")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "typedclients: --kubeconfig is required")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("loading %s: %v", *kubeconfig, err)
	}
	if *contentType != "" {
		cfg.ContentType = *contentType
		cfg.AcceptContentTypes = *contentType
		*requireProtobuf = false
	}
	recorder := &contentTypes{seen: map[string]string{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recording{into: recorder, next: rt} })
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fail("%v", err)
	}
	if bad := recorder.notProtobuf(); *requireProtobuf && len(bad) > 0 {
		fail("responses not in %s (kube-apiserver answers protobuf to these clients):\n  %s", protobufMediaType, strings.Join(bad, "\n  "))
	}
	fmt.Println("typedclients: all checks passed")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "typedclients: FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func run(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	apiext, err := apiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	suffix := utilrand.String(5)

	group := "typed-" + suffix + ".kcp-ts.test"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer", Minimum: ptr(0.0)}}},
					},
				}},
			}},
		},
	}
	if err := check(ctx, "CustomResourceDefinition", apiext.ApiextensionsV1().CustomResourceDefinitions(), crd,
		func(got *apiextensionsv1.CustomResourceDefinition) error {
			if got.Spec.Group != group || len(got.Spec.Versions) != 1 || got.Spec.Versions[0].Schema == nil {
				return fmt.Errorf("spec differs from what was created: %+v", got.Spec)
			}
			return nil
		},
		func(ctx context.Context) error { return waitEstablished(ctx, apiext, crd.Name) }); err != nil {
		return err
	}

	fail := admissionregistrationv1.Fail
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "typed-vap-" + suffix},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'typed-clients-refused'", Message: "refused by the typed client check"}},
		},
	}
	if err := check(ctx, "ValidatingAdmissionPolicy", kube.AdmissionregistrationV1().ValidatingAdmissionPolicies(), vap,
		func(got *admissionregistrationv1.ValidatingAdmissionPolicy) error {
			if len(got.Spec.Validations) != 1 || got.Spec.Validations[0].Expression != vap.Spec.Validations[0].Expression || got.Spec.MatchConstraints == nil {
				return fmt.Errorf("spec differs from what was created: %+v", got.Spec)
			}
			return nil
		}, nil); err != nil {
		return err
	}

	vapb := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "typed-vapb-" + suffix},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        vap.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if err := check(ctx, "ValidatingAdmissionPolicyBinding", kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings(), vapb,
		func(got *admissionregistrationv1.ValidatingAdmissionPolicyBinding) error {
			if got.Spec.PolicyName != vap.Name || len(got.Spec.ValidationActions) != 1 || got.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
				return fmt.Errorf("spec differs from what was created: %+v", got.Spec)
			}
			return nil
		}, nil); err != nil {
		return err
	}

	mapolicy := &admissionregistrationv1beta1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "typed-map-" + suffix},
		Spec: admissionregistrationv1beta1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1beta1.MatchResources{ResourceRules: []admissionregistrationv1beta1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1beta1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Mutations: []admissionregistrationv1beta1.Mutation{{
				PatchType: admissionregistrationv1beta1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1beta1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"typed-clients": "mutated"}}}`,
				},
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	if err := check(ctx, "MutatingAdmissionPolicy", kube.AdmissionregistrationV1beta1().MutatingAdmissionPolicies(), mapolicy,
		func(got *admissionregistrationv1beta1.MutatingAdmissionPolicy) error {
			if len(got.Spec.Mutations) != 1 || got.Spec.Mutations[0].ApplyConfiguration == nil ||
				got.Spec.Mutations[0].ApplyConfiguration.Expression != mapolicy.Spec.Mutations[0].ApplyConfiguration.Expression {
				return fmt.Errorf("spec differs from what was created: %+v", got.Spec)
			}
			return nil
		}, nil); err != nil {
		return err
	}

	mapb := &admissionregistrationv1beta1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "typed-mapb-" + suffix},
		Spec:       admissionregistrationv1beta1.MutatingAdmissionPolicyBindingSpec{PolicyName: mapolicy.Name},
	}
	if err := check(ctx, "MutatingAdmissionPolicyBinding", kube.AdmissionregistrationV1beta1().MutatingAdmissionPolicyBindings(), mapb,
		func(got *admissionregistrationv1beta1.MutatingAdmissionPolicyBinding) error {
			if got.Spec.PolicyName != mapolicy.Name {
				return fmt.Errorf("spec differs from what was created: %+v", got.Spec)
			}
			return nil
		}, nil); err != nil {
		return err
	}

	url := "https://127.0.0.1:1/validate"
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "typed-vwc-" + suffix},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "typed-clients.kcp-ts.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			SideEffects:             &none,
			FailurePolicy:           &ignore,
			AdmissionReviewVersions: []string{"v1"},
			// Matches nothing that exists, so it never delays another request while it lives.
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
			}},
		}},
	}
	return check(ctx, "ValidatingWebhookConfiguration", kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(), vwc,
		func(got *admissionregistrationv1.ValidatingWebhookConfiguration) error {
			if len(got.Webhooks) != 1 || got.Webhooks[0].ClientConfig.URL == nil || *got.Webhooks[0].ClientConfig.URL != url {
				return fmt.Errorf("webhooks differ from what was created: %+v", got.Webhooks)
			}
			// kube's SetDefaults_ValidatingWebhook: matchPolicy Equivalent, timeoutSeconds 10, namespace and object selectors {}.
			w := got.Webhooks[0]
			if w.MatchPolicy == nil || *w.MatchPolicy != admissionregistrationv1.Equivalent || w.TimeoutSeconds == nil || *w.TimeoutSeconds != 10 ||
				w.NamespaceSelector == nil || w.ObjectSelector == nil {
				return fmt.Errorf("webhook not defaulted as kube's SetDefaults_ValidatingWebhook: %+v", w)
			}
			return nil
		}, nil)
}

// check runs the create/get/list/update/delete cycle of one kind with a watch open from before
// the create. verify inspects the created and the fetched object; ready (optional) waits after
// the create until the object is usable (a CRD Established).
func check[T object, L runtime.Object](ctx context.Context, kind string, c typedClient[T, L], obj T, verify func(T) error, ready func(context.Context) error) error {
	name := obj.GetName()
	step := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s %s: %s: %w", kind, name, what, err)
		}
		return nil
	}
	before, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		return step("list before create", err)
	}
	rv, err := metaResourceVersion(before)
	if err != nil {
		return step("list before create", err)
	}
	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return step("watch", err)
	}
	defer w.Stop()

	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return step("create", err)
	}
	if created.GetName() != name || created.GetUID() == "" || created.GetResourceVersion() == "" {
		return step("create", fmt.Errorf("answer has name %q uid %q resourceVersion %q", created.GetName(), created.GetUID(), created.GetResourceVersion()))
	}
	if err := verify(created); err != nil {
		return step("create", err)
	}
	if ready != nil {
		if err := ready(ctx); err != nil {
			return step("ready", err)
		}
	}
	got, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return step("get", err)
	}
	if got.GetUID() != created.GetUID() {
		return step("get", fmt.Errorf("uid %q, created %q", got.GetUID(), created.GetUID()))
	}
	if err := verify(got); err != nil {
		return step("get", err)
	}
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		return step("list", err)
	}
	if !listHas(list, created.GetUID()) {
		return step("list", errors.New("the created object is not in the list"))
	}
	var updated T
	err = retryOnConflict(ctx, func() error {
		cur, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		labels := cur.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["typed-clients"] = "updated"
		cur.SetLabels(labels)
		updated, err = c.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return step("update", err)
	}
	if updated.GetLabels()["typed-clients"] != "updated" {
		return step("update", fmt.Errorf("labels after update: %v", updated.GetLabels()))
	}
	if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return step("delete", err)
	}
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := c.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return false, nil
		}
		var status interface{ Status() metav1.Status }
		if errors.As(err, &status) && status.Status().Code == http.StatusNotFound {
			return true, nil
		}
		return false, err
	}); err != nil {
		return step("waiting for the delete to finish", err)
	}
	return step("watch", expectEvents[T](ctx, w, created.GetUID()))
}

// expectEvents reads the watch until DELETED: the first event must be ADDED, one MODIFIED must
// carry the label the update set, each object must be a T with the created uid.
func expectEvents[T object](ctx context.Context, w watch.Interface, uid types.UID) error {
	var seen []string
	sawLabel := false
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("no DELETED event before the deadline; saw %v", seen)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch closed before DELETED; saw %v", seen)
			}
			seen = append(seen, string(ev.Type))
			if ev.Type == watch.Error {
				return fmt.Errorf("ERROR event: %v", ev.Object)
			}
			o, isT := ev.Object.(T)
			if !isT {
				return fmt.Errorf("%s event object is %T", ev.Type, ev.Object)
			}
			if o.GetUID() != uid {
				return fmt.Errorf("%s event for uid %q, created %q", ev.Type, o.GetUID(), uid)
			}
			switch {
			case len(seen) == 1 && ev.Type != watch.Added:
				return fmt.Errorf("first event is %s, want ADDED", ev.Type)
			case ev.Type == watch.Modified && o.GetLabels()["typed-clients"] == "updated":
				sawLabel = true
			case ev.Type == watch.Deleted:
				if !sawLabel {
					return fmt.Errorf("no MODIFIED event carried the updated label; saw %v", seen)
				}
				return nil
			}
		}
	}
}

func waitEstablished(ctx context.Context, c apiextensionsclientset.Interface, name string) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func retryOnConflict(ctx context.Context, fn func() error) error {
	for i := 0; ; i++ {
		err := fn()
		var status interface{ Status() metav1.Status }
		if err == nil || i == 4 || !errors.As(err, &status) || status.Status().Code != http.StatusConflict {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func metaResourceVersion(list runtime.Object) (string, error) {
	l, ok := list.(metav1.ListInterface)
	if !ok {
		return "", fmt.Errorf("%T is not a list", list)
	}
	return l.GetResourceVersion(), nil
}

func listHas(list runtime.Object, uid types.UID) bool {
	found := false
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil && m.GetUID() == uid {
			found = true
		}
		return nil
	})
	return found
}

func ptr[T any](v T) *T { return &v }
