// Command h2informer checks that client-go multiplexes a controller's traffic over one HTTP/2
// connection, as it does against kube-apiserver: one clientset starts --watches informers (each a
// LIST and a WATCH of ConfigMaps in its own namespace, client-go's shared informer machinery),
// waits until all have synced, creates one ConfigMap in each namespace and waits until every
// informer has seen its ADDED event. It counts the TCP connections client-go dialled and records
// the protocol of every response.
//
//	h2informer --kubeconfig FILE [--watches 50] [--timeout 60s]
//
// Prints one line `RESULT {"dials":N,"protocols":{"HTTP/2.0":M},"watches":W,"events":E}` and
// exits 0 once every informer saw its event (1 on timeout or error, 2 for bad usage). Whether
// the figures are right is the caller's to judge (test/e2e/http2.test.ts).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// protocols counts responses by protocol (resp.Proto).
type protocols struct {
	mu sync.Mutex
	by map[string]int
}

type countingTransport struct {
	next http.RoundTripper
	seen *protocols
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		t.seen.mu.Lock()
		t.seen.by[resp.Proto]++
		t.seen.mu.Unlock()
	}
	return resp, err
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	watches := flag.Int("watches", 50, "informers (one namespace each)")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after")
	flag.Parse()
	if *kubeconfig == "" || *watches < 1 {
		fmt.Fprintln(os.Stderr, "usage: h2informer --kubeconfig FILE [--watches 50] [--timeout 60s]")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(2)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	var dials atomic.Int64
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	seen := &protocols{by: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, seen: seen} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(1)
	}

	prefix := fmt.Sprintf("h2inf-%d", time.Now().UnixNano()%1000000)
	var got atomic.Int64
	done := make(chan struct{}, *watches)
	var syncs []cache.InformerSynced
	for i := 0; i < *watches; i++ {
		ns := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			fail("create namespace %s: %v", ns, err)
		}
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
		inf := factory.Core().V1().ConfigMaps().Informer()
		var once sync.Once
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == "probe" {
				once.Do(func() { got.Add(1); done <- struct{}{} })
			}
		}}); err != nil {
			fail("handler: %v", err)
		}
		factory.Start(ctx.Done())
		syncs = append(syncs, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		fail("informers did not sync within %s", *timeout)
	}
	for i := 0; i < *watches; i++ {
		ns := fmt.Sprintf("%s-%d", prefix, i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			fail("create configmap in %s: %v", ns, err)
		}
	}
	for i := 0; i < *watches; i++ {
		select {
		case <-done:
		case <-ctx.Done():
			fail("only %d of %d informers saw their ConfigMap within %s", got.Load(), *watches, *timeout)
		}
	}
	seen.mu.Lock()
	out, _ := json.Marshal(map[string]any{"dials": dials.Load(), "protocols": seen.by, "watches": *watches, "events": got.Load()})
	seen.mu.Unlock()
	fmt.Printf("RESULT %s\n", out)
}
