// Command image packs a static metawatch binary into an OCI image, on an empty
// base, running as a non-root user, and writes it as an OCI image layout
// tarball: no container engine needed. `make image` runs it.
//
//	go run ./hack/image --binary bin/linux-amd64/metawatch --ref ghcr.io/metawatch/metawatch:0.1.0 --out bin/metawatch-image.tar
//
// Load it with `docker load -i` (Docker 25+) or `podman load -i`, or extract
// it and push the OCI layout directory with `crane push <dir> <ref>`.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "bin/linux-amd64/metawatch", "The static linux binary to pack.")
	flag.StringVar(&o.ref, "ref", "ghcr.io/metawatch/metawatch:dev", "The image reference the tarball is tagged with.")
	flag.StringVar(&o.out, "out", "bin/metawatch-image.tar", "Where to write the OCI image layout tarball.")
	flag.StringVar(&o.arch, "arch", "amd64", "The binary's architecture.")
	flag.Parse()
	if err := build(o); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("image: wrote %s (%s, entrypoint /metawatch, user %s)\n", o.out, o.ref, User)
}
