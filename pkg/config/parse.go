package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ErrEmpty is returned for a configuration with no content.
var ErrEmpty = errors.New("configuration is empty: it needs at least one entry under watches")

// Parse decodes a configuration strictly (unknown or duplicate fields are
// errors) and validates it. The error lists every problem found, each with its field path.
func Parse(data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Invalid(ErrEmpty)
	}
	c, err := decodeStrict(data)
	if err != nil {
		return nil, Invalid(err)
	}
	if err := Validate(c).ToAggregate(); err != nil {
		return nil, Invalid(err)
	}
	return c, nil
}

// decodeStrict decodes like the API server's strict decoding: duplicate keys,
// unknown fields (with their path, e.g. watches[0].labelSelctor) and keys in
// the wrong case are errors. encoding/json alone would match "Kind" to "kind".
func decodeStrict(data []byte) (*Config, error) {
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("decoding configuration: %w", err)
	}
	var c Config
	strictErrs, err := kjson.UnmarshalStrict(jsonData, &c)
	if err != nil {
		if described := typeError(data, jsonData); described != nil {
			return nil, fmt.Errorf("decoding configuration: %w", described)
		}
		return nil, fmt.Errorf("decoding configuration: %w", err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("decoding configuration: %w", errors.Join(strictErrs...))
	}
	return &c, nil
}

// ParseFile reads path, which holds either a bare configuration or a ConfigMap
// manifest (the file users `kubectl apply`), and parses the configuration.
func ParseFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	data, err = unwrapConfigMap(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// unwrapConfigMap returns the config.yaml of a ConfigMap manifest, or data
// unchanged when it is not one.
func unwrapConfigMap(data []byte) ([]byte, error) {
	var head struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(data, &head); err != nil || head.Kind != "ConfigMap" || head.APIVersion != "v1" {
		return data, nil //nolint:nilerr // not a ConfigMap: Parse reports what is wrong with it
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		return nil, fmt.Errorf("decoding ConfigMap manifest: %w", err)
	}
	return ConfigMapData(&cm)
}

// ConfigMapData returns the configuration held by a selectors ConfigMap.
func ConfigMapData(cm *corev1.ConfigMap) ([]byte, error) {
	content, ok := cm.Data[DataKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no data key %q: put the configuration under data.%s",
			cm.Namespace, cm.Name, DataKey, DataKey)
	}
	return []byte(content), nil
}
