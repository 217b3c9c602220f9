// Command imagebuild assembles the pipeline container image offline from a
// static binary: no daemon, no base image, no registry. It writes one tar
// that is both a docker-archive (manifest.json; `podman load`, `docker load`,
// `kind load image-archive`) and an OCI image layout (index.json, oci-layout,
// blobs/sha256). The output is byte-for-byte reproducible: every time stamp
// is the Unix epoch and every file is written in a fixed order.
//
// The image equals the Dockerfile's final stage: /pipeline, CA
// certificates, /tmp, a passwd naming the nonroot user 65532, the same
// labels, user, entrypoint and command (image_test.go compares them).
//
//	go run ./deploy/imagebuild -binary bin/image/pipeline -tag localhost/pipeline:dev -o bin/pipeline-image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
)

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "bin/image/pipeline", "static pipeline binary (CGO_ENABLED=0)")
	flag.StringVar(&o.tag, "tag", "localhost/pipeline:dev", "image reference written into the archive")
	flag.StringVar(&o.version, "version", "dev", "org.opencontainers.image.version label")
	flag.StringVar(&o.revision, "revision", "unknown", "org.opencontainers.image.revision label")
	flag.StringVar(&o.caFile, "ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied to /etc/ssl/certs/ca-certificates.crt; empty leaves it out")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "image architecture (the binary's GOARCH)")
	out := flag.String("o", "bin/pipeline-image.tar", "output tar")
	flag.Parse()
	if err := build(o, *out); err != nil {
		fmt.Fprintf(os.Stderr, "imagebuild: %v\n", err)
		os.Exit(1)
	}
}

// build writes the image of o to path atomically.
func build(o options, path string) error {
	img, err := assemble(o)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if err := img.write(f, o.tag); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	fmt.Printf("%s %s (%s)\n", path, o.tag, img.manifestDigest)
	return nil
}
