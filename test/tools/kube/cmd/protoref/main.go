// Command protoref converts Kubernetes objects between JSON and the Kubernetes protobuf encoding with
// client-go's scheme (every built-in kind, meta/v1 and meta/v1beta1, apiextensions.k8s.io/v1, and
// aggregated discovery apidiscovery.k8s.io v2 and v2beta1), the reference the codec tests of kcp-ts
// compare against. Test harness only.
//
//	protoref encode      < obj.json > obj.pb     JSON -> magic "k8s\x00" + runtime.Unknown (protobuf.Serializer)
//	protoref encode --strip-version              the same, then re-encoded with an empty apiVersion as the
//	                                             apiserver's discovery stripVersionEncoder writes /api's
//	                                             APIVersions (k8s.io/apiserver/pkg/endpoints/discovery/util.go)
//	protoref decode      < obj.pb   > obj.json   the reverse, written as the apiserver's JSON serializer writes it
//	protoref watch TYPE  < obj.json > frame      one watch frame as the apiserver writes it for
//	                                             application/vnd.kubernetes.protobuf;stream=watch:
//	                                             4-byte big-endian length + metav1.WatchEvent (raw serializer)
//	                                             whose object.raw is the object's full protobuf encoding
//
// JSON decoding applies no defaults and no conversion: what goes in is what is encoded.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "protoref:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	s := scheme.Scheme
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	metav1.AddMetaToScheme(s)
	if err := metav1beta1.AddMetaToScheme(s); err != nil {
		return err
	}
	if err := apidiscoveryv2.AddToScheme(s); err != nil {
		return err
	}
	if err := apidiscoveryv2beta1.AddToScheme(s); err != nil {
		return err
	}
	jsonSer := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s, jsonserializer.SerializerOptions{})
	pbSer := protobuf.NewSerializer(s, s)
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("usage: protoref encode|decode|watch TYPE")
	}
	switch args[0] {
	case "encode":
		obj, _, err := jsonSer.Decode(data, nil, nil)
		if err != nil {
			return err
		}
		if len(args) == 2 && args[1] == "--strip-version" {
			// stripVersionEncoder.doEncode: encode, decode, clear group and version, encode again.
			var buf bytes.Buffer
			if err := pbSer.Encode(obj, &buf); err != nil {
				return err
			}
			decoded, gvk, err := pbSer.Decode(buf.Bytes(), nil, nil)
			if err != nil {
				return err
			}
			gvk.Group, gvk.Version = "", ""
			decoded.GetObjectKind().SetGroupVersionKind(*gvk)
			return pbSer.Encode(decoded, out)
		}
		return pbSer.Encode(obj, out)
	case "decode":
		obj, gvk, err := pbSer.Decode(data, nil, nil)
		if err != nil {
			return err
		}
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		return jsonSer.Encode(obj, out)
	case "watch":
		if len(args) != 2 {
			return fmt.Errorf("usage: protoref watch TYPE")
		}
		obj, _, err := jsonSer.Decode(data, nil, nil)
		if err != nil {
			return err
		}
		var embedded bytes.Buffer
		if err := pbSer.Encode(obj, &embedded); err != nil {
			return err
		}
		event := &metav1.WatchEvent{Type: args[1], Object: runtime.RawExtension{Raw: embedded.Bytes()}}
		raw := protobuf.NewRawSerializer(s, s)
		return raw.Encode(event, protobuf.LengthDelimitedFramer.NewFrameWriter(out))
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
}
