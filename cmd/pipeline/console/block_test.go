package console

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

// TestBlockTextMasks shows a block as written, with the expression of a
// Sensitive attribute (at the top and in a nested block) and the text of a
// known secret masked.
func TestBlockTextMasks(t *testing.T) {
	src := `# before
sink "nats" "out" {
  url   = "nats://127.0.0.1:4222"
  token = "s3cr3t-literal"
  auth {
    password = "hunter2-nested"
    user     = "alice"
  }
  subject = "prefix-${"known-secret-value"}"
}
# after
`
	f, diags := hclsyntax.ParseConfig([]byte(src), "p.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	blk := f.Body.(*hclsyntax.Body).Blocks[0]
	decl := schema.Block{
		Attrs: []schema.Attribute{schema.String("url"), schema.String("token").Sensitive(), schema.String("subject")},
		Blocks: []*schema.BlockType{{Name: "auth", Body: schema.Block{
			Attrs: []schema.Attribute{schema.String("password").Sensitive(), schema.String("user")}}}},
	}
	n := &graph.Node{Spec: node.Spec{Body: decl}, Block: &schema.NodeBlock{Body: blk.Body, DeclRange: blk.DefRange()}}
	cfg := &schema.Config{Files: map[string]*hcl.File{"p.hcl": f}}
	got := blockText(cfg, n, redact.New([]string{"known-secret-value"}))
	for _, secret := range []string{"s3cr3t-literal", "hunter2-nested", "known-secret-value"} {
		if strings.Contains(got, secret) {
			t.Errorf("the block shows %q:\n%s", secret, got)
		}
	}
	for _, shown := range []string{`sink "nats" "out" {`, `url   = "nats://127.0.0.1:4222"`, `token = "(sensitive)"`,
		`password = "(sensitive)"`, `user     = "alice"`} {
		if !strings.Contains(got, shown) {
			t.Errorf("the block lacks %q:\n%s", shown, got)
		}
	}
	if strings.Contains(got, "# before") || strings.Contains(got, "# after") || !strings.HasSuffix(got, "}") {
		t.Errorf("the block is not exactly the block:\n%s", got)
	}
}
