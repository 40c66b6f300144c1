package apiserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/metawatch/metawatch/pkg/config"
)

// NewRESTMapper discovers the API server's kinds, lazily, as controller-runtime does.
func NewRESTMapper(cfg *rest.Config) (meta.RESTMapper, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating HTTP client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("discovering the API server's kinds: %w", err)
	}
	return mapper, nil
}

// Resolve resolves conf's kinds against the cluster cfg points at (see config.Resolve).
func Resolve(cfg *rest.Config, conf *config.Config) (watches []config.ResolvedWatch, warnings []string, err error) {
	mapper, err := NewRESTMapper(cfg)
	if err != nil {
		return nil, nil, err
	}
	return config.Resolve(conf, mapper)
}
