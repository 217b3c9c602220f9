package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// options are what the image is made of.
type options struct {
	binary, tag, version, revision, caFile, arch string
}

// The image's run settings; image_test.go checks them against the
// Dockerfile so the two images cannot drift apart.
const (
	imageUser  = "65532:65532"
	listenPort = "9464/tcp"
)

var (
	imageEntrypoint = []string{"/pipeline"}
	imageCmd        = []string{"run", "/etc/pipeline"}
)

func labels(o options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "pipeline",
		"org.opencontainers.image.description": "Declarative pipelines that keep eBPF maps, NATS and audit trails in sync with Kubernetes",
		"org.opencontainers.image.source":      "https://github.com/pipeline/pipeline",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.revision":    o.revision,
	}
}

// epoch is every time stamp of the image, for reproducible output.
var epoch = time.Unix(0, 0).UTC()

// blob is content-addressed bytes.
type blob struct {
	data   []byte
	digest string // sha256:<hex>
}

func newBlob(b []byte) blob {
	sum := sha256.Sum256(b)
	return blob{data: b, digest: "sha256:" + hex.EncodeToString(sum[:])}
}

func (b blob) path() string { return "blobs/sha256/" + b.digest[len("sha256:"):] }

// image is an assembled single-layer image.
type image struct {
	layer, config, manifest blob
	manifestDigest          string
}

const (
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// assemble builds the layer, the config and the manifest.
func assemble(o options) (*image, error) {
	layer, err := rootfs(o)
	if err != nil {
		return nil, err
	}
	img := &image{layer: newBlob(layer)}
	cfg := map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": o.arch,
		"os":           "linux",
		"config": map[string]any{
			"User":         imageUser,
			"Entrypoint":   imageEntrypoint,
			"Cmd":          imageCmd,
			"Env":          []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
			"ExposedPorts": map[string]any{listenPort: map[string]any{}},
			"WorkingDir":   "/",
			"Labels":       labels(o),
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{img.layer.digest}},
		"history": []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "deploy/imagebuild"}},
	}
	cb, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	img.config = newBlob(cb)
	mb, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaManifest,
		"config":        descriptor{MediaType: mediaConfig, Digest: img.config.digest, Size: len(img.config.data)},
		"layers":        []descriptor{{MediaType: mediaLayer, Digest: img.layer.digest, Size: len(img.layer.data)}},
		"annotations":   labels(o),
	})
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	img.manifest = newBlob(mb)
	img.manifestDigest = img.manifest.digest
	return img, nil
}

// file is one entry of the root filesystem.
type file struct {
	name string
	mode int64
	dir  bool
	data []byte
}

// rootfs returns the layer tar: what distroless/static:nonroot provides
// that the binary uses, and the binary.
func rootfs(o options) ([]byte, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, fmt.Errorf("read binary (build it with CGO_ENABLED=0): %w", err)
	}
	files := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/pipeline/", mode: 0o755, dir: true},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true},
		{name: "pipeline", mode: 0o755, data: bin},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	if o.caFile != "" {
		ca, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, fmt.Errorf("read CA bundle (-ca \"\" leaves it out): %w", err)
		}
		files = append(files, file{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca})
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch, Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if f.name == "home/nonroot/" {
			h.Uid, h.Gid = 65532, 65532
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}

// write writes the archive: oci-layout, index.json and manifest.json beside
// the blobs, so that both docker-archive and OCI readers load it.
func (img *image) write(w io.Writer, tag string) error {
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaIndex,
		"manifests": []descriptor{{MediaType: mediaManifest, Digest: img.manifest.digest, Size: len(img.manifest.data),
			Annotations: map[string]string{"io.containerd.image.name": tag, "org.opencontainers.image.ref.name": refName(tag)}}},
	})
	if err != nil {
		return err
	}
	docker, err := json.Marshal([]map[string]any{{
		"Config": img.config.path(), "RepoTags": []string{tag}, "Layers": []string{img.layer.path()},
	}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	entries := []struct {
		name string
		data []byte
	}{
		{"blobs/", nil}, {"blobs/sha256/", nil},
		{img.config.path(), img.config.data},
		{img.layer.path(), img.layer.data},
		{img.manifest.path(), img.manifest.data},
		{"index.json", index},
		{"manifest.json", docker},
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, ModTime: epoch, Typeflag: tar.TypeReg, Size: int64(len(e.data)), Format: tar.FormatPAX}
		if e.data == nil {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// refName is the tag part of an image reference ("dev" of
// "localhost/pipeline:dev"), as OCI layouts name their images.
func refName(ref string) string {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return ref[i+1:]
		}
	}
	return "latest"
}
