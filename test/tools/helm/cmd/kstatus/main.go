// Command kstatus prints the kstatus of Kubernetes objects, as Argo CD and Flux compute health.
//
// Input: one JSON object, or a List, on stdin. Output: one line per object,
// "<kind>/<name> <status> <message>", where status is Current, InProgress, Failed,
// Terminating or Unknown (sigs.k8s.io/cli-utils/pkg/kstatus/status).
package main

import (
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// apimachinery's json keeps integers int64, as unstructured objects need.
	var obj map[string]interface{}
	if err := json.Unmarshal(data, &obj); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus: stdin is not a JSON object:", err)
		os.Exit(2)
	}
	items := []map[string]interface{}{obj}
	if list, ok := obj["items"].([]interface{}); ok {
		items = nil
		for _, it := range list {
			if m, ok := it.(map[string]interface{}); ok {
				items = append(items, m)
			}
		}
	}
	for _, it := range items {
		u := &unstructured.Unstructured{Object: it}
		res, err := status.Compute(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kstatus:", err)
			os.Exit(1)
		}
		fmt.Printf("%s/%s %s %s\n", u.GetKind(), u.GetName(), res.Status, res.Message)
	}
}
