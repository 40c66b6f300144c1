package config

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
)

// Hash identifies a configuration by content, not by bytes: re-applying the
// ConfigMap with other comments or whitespace is not a change. It returns the
// hex SHA-256 of the canonical JSON form, and its first 48 bits as a float64
// for the metawatch_config_hash metric (exact in a float64).
func Hash(c *Config) (string, float64) {
	canonical, _ := json.Marshal(c) // a Config always marshals
	sum := sha256.Sum256(canonical)
	prefix := binary.BigEndian.Uint64(sum[:8]) >> 16
	return hex.EncodeToString(sum[:]), float64(prefix)
}
