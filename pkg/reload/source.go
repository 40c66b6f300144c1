package reload

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
)

// Source says where the configuration is: exactly one of File and ConfigMap.
type Source struct {
	// File is a path to a bare configuration or a ConfigMap manifest.
	File string
	// ConfigMap is "namespace/name" of the selectors ConfigMap.
	ConfigMap string
}

// Validate reports a Source that names no or both places.
func (s Source) Validate() error {
	switch {
	case s.File == "" && s.ConfigMap == "":
		return fmt.Errorf("no configuration: set --config-file PATH or --config-map NAMESPACE/NAME")
	case s.File != "" && s.ConfigMap != "":
		return fmt.Errorf("both --config-file and --config-map are set: choose one")
	}
	_, err := s.configMapKey()
	return err
}

// Installation names the source on what metawatch makes besides the
// watched objects' keys (admission policies): the ConfigMap's
// namespace/name, or the file's path (which two installations may share:
// settings.Settings.Installation tells them apart).
func (s Source) Installation() string {
	if s.ConfigMap != "" {
		return s.ConfigMap
	}
	return "file " + s.File
}

func (s Source) configMapKey() (types.NamespacedName, error) {
	if s.ConfigMap == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(s.ConfigMap, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--config-map %q: want NAMESPACE/NAME, e.g. metawatch-system/metawatch-selectors", s.ConfigMap)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// Load reads and parses the configuration from s. It calls restConfig only for
// a ConfigMap, so a file is checked offline, before any cluster is contacted.
func Load(ctx context.Context, restConfig func() (*rest.Config, error), s Source) (*config.Config, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.File != "" {
		return config.ParseFile(s.File)
	}
	cfg, err := restConfig()
	if err != nil {
		return nil, err
	}
	return loadConfigMap(ctx, cfg, s)
}

func loadConfigMap(ctx context.Context, cfg *rest.Config, s Source) (*config.Config, error) {
	key, _ := s.configMapKey() // checked by Validate
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, key, &cm); err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	return parseConfigMap(&cm)
}

// parseConfigMap parses the configuration a selectors ConfigMap holds.
func parseConfigMap(cm *corev1.ConfigMap) (*config.Config, error) {
	data, err := config.ConfigMapData(cm)
	if err != nil {
		return nil, err
	}
	conf, err := config.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s, data.%s: %w", cm.Namespace, cm.Name, config.DataKey, err)
	}
	return conf, nil
}

// String names the source for messages.
func (s Source) String() string {
	if s.ConfigMap != "" {
		return "ConfigMap " + s.ConfigMap
	}
	return "file " + s.File
}
