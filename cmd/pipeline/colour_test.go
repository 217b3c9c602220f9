package main

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

func TestColourWriter(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(colourWriter{&buf}, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	log.Warn("write failed; will retry", "key", "level=INFO")
	log.Info("running")
	want := "level=\x1b[33mWARN\x1b[0m msg=\"write failed; will retry\" key=\"level=INFO\"\n" +
		"level=\x1b[32mINFO\x1b[0m msg=running\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if view.Colourful(&buf) {
		t.Error("a buffer is not a terminal")
	}
}
