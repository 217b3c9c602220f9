package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

func TestSensitiveValues(t *testing.T) {
	body := Block{
		Attrs:  []Attribute{String("token").Sensitive(), String("url")},
		Blocks: []*BlockType{Nested("auth", Block{Attrs: []Attribute{String("password").Sensitive()}})},
	}
	src := "source \"x\" \"y\" {\n token = \"t-${var.v}\"\n url = \"nats://h\"\n auth {\n password = \"pw\"\n }\n}\nvariable \"v\" {\n default = \"1\"\n}\n"
	cfg, diags := NewLoader().ParseSource("s.hcl", []byte(src), Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c, diags := Decode(cfg.Nodes[0].Body, body, cfg.Ctx, hcl.Range{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if diff := cmp.Diff([]string{"t-1", "pw"}, body.SensitiveValues(c)); diff != "" {
		t.Error(diff)
	}
}
