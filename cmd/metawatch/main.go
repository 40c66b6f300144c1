// Command metawatch watches the metadata of built-in kinds and keeps their
// labels and annotations with rules. See README.md; app.go tells the start-up.
package main

import (
	"context"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metawatch/metawatch/pkg/check"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(check.Run(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
	}
	opts := parseFlags(os.Args[1:])
	if opts.version {
		fmt.Println(version.String())
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintf(os.Stderr, "metawatch: %s\n", config.Describe(err))
		os.Exit(1)
	}
}
