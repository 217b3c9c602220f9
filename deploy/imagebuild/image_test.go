package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testOptions(t *testing.T) options {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pipeline")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	return options{binary: bin, tag: "localhost/pipeline:test", version: "v1", revision: "abc", arch: "amd64"}
}

func archive(t *testing.T, o options) []byte {
	t.Helper()
	img, err := assemble(o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := img.write(&buf, o.tag); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func entries(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out[h.Name] = data
	}
}

func TestReproducible(t *testing.T) {
	o := testOptions(t)
	if !bytes.Equal(archive(t, o), archive(t, o)) {
		t.Fatal("two builds of the same inputs differ")
	}
}

// TestArchiveReadable follows both readers' paths: docker-archive's
// manifest.json and the OCI index.json must reach the same config and layer.
func TestArchiveReadable(t *testing.T) {
	o := testOptions(t)
	files := entries(t, archive(t, o))
	var docker []struct{ Config, RepoTags, Layers any }
	if err := json.Unmarshal(files["manifest.json"], &docker); err != nil || len(docker) != 1 {
		t.Fatalf("manifest.json: %v %s", err, files["manifest.json"])
	}
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v", err)
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	mpath := "blobs/sha256/" + strings.TrimPrefix(index.Manifests[0].Digest, "sha256:")
	if err := json.Unmarshal(files[mpath], &manifest); err != nil {
		t.Fatalf("manifest %s: %v", mpath, err)
	}
	if got, want := "blobs/sha256/"+strings.TrimPrefix(manifest.Config.Digest, "sha256:"), docker[0].Config; got != want {
		t.Errorf("OCI config %s, docker config %s", got, want)
	}
	for _, d := range append(manifest.Layers, manifest.Config, index.Manifests[0]) {
		p := "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:")
		if b, ok := files[p]; !ok || newBlob(b).digest != d.Digest || len(b) != d.Size {
			t.Errorf("blob %s missing or not matching its descriptor", p)
		}
	}
	layer := entries(t, files["blobs/sha256/"+strings.TrimPrefix(manifest.Layers[0].Digest, "sha256:")])
	var names []string
	for n := range layer {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"etc/", "etc/group", "etc/passwd", "etc/pipeline/", "etc/ssl/", "etc/ssl/certs/", "home/", "home/nonroot/", "pipeline", "tmp/"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("layer files (-want +got):\n%s", d)
	}
}

// TestMatchesDockerfile keeps the offline image equal to the Dockerfile's
// final stage: user, entrypoint, command, port and label names.
func TestMatchesDockerfile(t *testing.T) {
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(df)
	final := text[strings.LastIndex(text, "\nFROM "):]
	line := func(instr string) string {
		m := regexp.MustCompile(`(?m)^` + instr + ` (.*)$`).FindStringSubmatch(final)
		if m == nil {
			t.Fatalf("Dockerfile final stage has no %s", instr)
		}
		return m[1]
	}
	asJSON := func(v []string) string { b, _ := json.Marshal(v); return strings.ReplaceAll(string(b), ",", ", ") }
	if got := line("USER"); got != imageUser {
		t.Errorf("Dockerfile USER %s, imagebuild %s", got, imageUser)
	}
	if got := line("ENTRYPOINT"); got != asJSON(imageEntrypoint) {
		t.Errorf("Dockerfile ENTRYPOINT %s, imagebuild %s", got, asJSON(imageEntrypoint))
	}
	if got := line("CMD"); got != asJSON(imageCmd) {
		t.Errorf("Dockerfile CMD %s, imagebuild %s", got, asJSON(imageCmd))
	}
	if got := line("EXPOSE"); got+"/tcp" != listenPort {
		t.Errorf("Dockerfile EXPOSE %s, imagebuild %s", got, listenPort)
	}
	var inFile []string
	for _, m := range regexp.MustCompile(`(org\.opencontainers\.image\.[a-z]+)=`).FindAllStringSubmatch(final, -1) {
		inFile = append(inFile, m[1])
	}
	var inTool []string
	for k := range labels(options{}) {
		inTool = append(inTool, k)
	}
	sort.Strings(inFile)
	sort.Strings(inTool)
	if d := cmp.Diff(inFile, inTool); d != "" {
		t.Errorf("labels (-Dockerfile +imagebuild):\n%s", d)
	}
}

func TestRefName(t *testing.T) {
	for ref, want := range map[string]string{
		"localhost/pipeline:dev": "dev", "localhost:5000/pipeline": "latest", "localhost:5000/p:v1": "v1",
	} {
		if got := refName(ref); got != want {
			t.Errorf("refName(%q) = %q, want %q", ref, got, want)
		}
	}
}
