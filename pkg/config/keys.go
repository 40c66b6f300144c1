package config

import "strings"

// How keys are compared with the operator's patterns. The API server treats
// a key's prefix as a DNS subdomain, which is caseless: it validates
// annotation keys lower-cased (apimachinery's ValidateAnnotations), and a
// label key's prefix must be lower case. So Kubectl.Kubernetes.io/x names
// the same owner as kubectl.kubernetes.io/x, and a comparison that minds
// case lets a rule through a protection by capitalising it. Prefixes are
// therefore always compared without case. The name after the prefix is
// case-sensitive for the API server (App and app are two labels); where a
// pattern protects (--protected-keys) it is compared without case too,
// since protecting a look-alike costs nothing and a look-alike of a
// protected key is more often a mistake or an evasion than a need; where a
// pattern allows (--allowed-reserved-keys) the name must match exactly, so
// that allowing a key never allows another one.

// protectedBy returns the first of patterns that protects key: "*", the
// key itself or "prefix/*" for a key under prefix/, compared without case.
func protectedBy(patterns []string, key string) (string, bool) {
	return matchKey(patterns, key, strings.EqualFold)
}

// allowedBy returns the first of patterns that allows key: as protectedBy,
// but the name after the prefix compared exactly.
func allowedBy(patterns []string, key string) (string, bool) {
	return matchKey(patterns, key, func(a, b string) bool { return a == b })
}

// matchKey returns the first pattern that matches key: "*", the key itself,
// or "prefix/*" for a key under prefix/. Prefixes are compared without case,
// names with sameName.
func matchKey(patterns []string, key string, sameName func(a, b string) bool) (string, bool) {
	keyPrefix, keyName := splitKey(key)
	for _, p := range patterns {
		if p == "*" {
			return p, true
		}
		if prefix, isPrefix := strings.CutSuffix(p, "/*"); isPrefix {
			if keyPrefix != "" && strings.EqualFold(prefix, keyPrefix) {
				return p, true
			}
			continue
		}
		prefix, name := splitKey(p)
		if strings.EqualFold(prefix, keyPrefix) && sameName(name, keyName) {
			return p, true
		}
	}
	return "", false
}

// splitKey splits a label or annotation key into its prefix ("" when it has
// none) and its name.
func splitKey(key string) (prefix, name string) {
	if prefix, name, found := strings.Cut(key, "/"); found {
		return prefix, name
	}
	return "", key
}

// reservedKey reports whether a label or annotation key is Kubernetes' own:
// its prefix is kubernetes.io or k8s.io, or a subdomain of either (e.g.
// node-role.kubernetes.io, pod-security.kubernetes.io), in any case.
func reservedKey(key string) bool {
	prefix, _ := splitKey(key)
	prefix = strings.ToLower(prefix)
	for _, domain := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == domain || strings.HasSuffix(prefix, "."+domain) {
			return true
		}
	}
	return false
}
