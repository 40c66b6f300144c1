package probe

import (
	"net/http"
	"net/url"
	"testing"
)

func TestKey(t *testing.T) {
	cases := map[string]struct {
		method, url, contentType, want string
	}{
		"a metadata watch of pods in all namespaces": {
			"GET", "/api/v1/pods?labelSelector=a&watch=true", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
			"WATCH pods application/vnd.kubernetes.protobuf;as=PartialObjectMetadata",
		},
		"a typed list of pods in one namespace": {"GET", "/api/v1/namespaces/shop/pods?limit=500", "application/json", "LIST pods application/json"},
		"one namespace by name":                 {"GET", "/api/v1/namespaces/shop", "application/json", "GET namespaces application/json"},
		"an apply to a pod":                     {"PATCH", "/api/v1/namespaces/shop/pods/web-1", "application/json", "PATCH pods application/json"},
		"a grouped resource":                    {"GET", "/apis/apps/v1/namespaces/shop/deployments", "application/json", "LIST deployments application/json"},
		"discovery":                             {"GET", "/apis/apps/v1", "application/json", "other application/json"},
		"aggregated discovery":                  {"GET", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "other application/json;as=APIGroupDiscoveryList"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			resp := &http.Response{Header: http.Header{"Content-Type": {tc.contentType}}}
			if got := Key(&http.Request{Method: tc.method, URL: u}, resp); got != tc.want {
				t.Errorf("Key = %q, want %q", got, tc.want)
			}
		})
	}
}
