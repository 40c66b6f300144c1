package main

import (
	"crypto/tls"
	"fmt"
	"path/filepath"

	"github.com/metawatch/metawatch/pkg/metamanager"
)

// metricsCertValid refuses a --metrics-cert-dir that would not be served as
// given, before anything else runs: with --metrics-secure=false (plain HTTP
// serves no certificate), or without a certificate and key that make a pair.
// controller-runtime would fall back to a self-signed certificate without a
// word, and a scraper that verifies would fail far from the cause.
func metricsCertValid(opts metamanager.Options) error {
	dir := opts.MetricsCertDir
	if dir == "" {
		return nil
	}
	if !opts.MetricsSecure {
		return fmt.Errorf("--metrics-cert-dir=%s needs --metrics-secure: plain HTTP serves no certificate; drop --metrics-secure=false, or drop --metrics-cert-dir", dir)
	}
	cert, key := filepath.Join(dir, metamanager.MetricsCertFile), filepath.Join(dir, metamanager.MetricsKeyFile)
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return fmt.Errorf("--metrics-cert-dir=%s: want %s and %s there, a PEM certificate and its private key, as a kubernetes.io/tls Secret mounted as a volume holds them: %w",
			dir, metamanager.MetricsCertFile, metamanager.MetricsKeyFile, err)
	}
	return nil
}
