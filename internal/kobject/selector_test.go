package kobject

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/pipeline/pipeline/schema"
)

var testBlock = schema.Block{
	Attrs:  []schema.Attribute{SelectorAttr, FieldSelectorAttr, IndexByAttr, IgnoreFieldsAttr},
	Blocks: []*schema.BlockType{SelectorBlock},
}

func content(t *testing.T, src string) *schema.Content {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags)
	}
	c, diags := schema.Decode(f.Body, testBlock, &hcl.EvalContext{}, hcl.Range{Filename: "test.hcl"})
	if diags.HasErrors() {
		t.Fatalf("decode: %s", diags)
	}
	return c
}

func summaries(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		out = append(out, d.Summary)
	}
	return out
}

func TestDecodeSelector(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		want   string   // selector String()
		diags  []string // summaries
		detail string   // substring of the first diagnostic's detail
	}{
		{name: "none", src: ``, want: ""},
		{name: "string", src: `selector = "app=web,env in (prod,staging),!legacy"`, want: "app=web,env in (prod,staging),!legacy"},
		{name: "empty string", src: `selector = ""`, want: ""},
		{name: "bad string", src: `selector = "app in (a"`, diags: []string{"Invalid label selector"}},
		{name: "bad string key", src: `selector = "-x=1"`, diags: []string{"Invalid label selector"}},
		{name: "blocks every operator", src: `
selector {
  key = "a"
  operator = "="
  values = ["1"]
}
selector {
  key = "b"
  operator = "=="
  values = ["2"]
}
selector {
  key = "c"
  operator = "!="
  values = ["3"]
}
selector {
  key = "d"
  operator = "in"
  values = ["x", "y"]
}
selector {
  key = "e"
  operator = "notin"
  values = ["z"]
}
selector {
  key = "f"
  operator = "exists"
}
selector {
  key = "g"
  operator = "!exists"
}
`, want: "a=1,b==2,c!=3,d in (x,y),e notin (z),f,!g"},
		{name: "exists with values", src: `selector {
  key = "f"
  operator = "exists"
  values = ["x"]
}`,
			diags: []string{"Invalid label selector requirement"}, detail: `{ key = "f", operator = "exists", values = ["x"] } is invalid: "exists" takes no values`},
		{name: "in without values", src: `selector {
  key = "d"
  operator = "in"
}`,
			diags: []string{"Invalid label selector requirement"}, detail: `"in" needs at least one value`},
		{name: "equals two values", src: `selector {
  key = "a"
  operator = "="
  values = ["1", "2"]
}`,
			diags: []string{"Invalid label selector requirement"}, detail: "exactly one value"},
		{name: "bad key", src: `selector {
  key = "bad key!"
  operator = "exists"
}`,
			diags: []string{"Invalid label selector requirement"}, detail: "bad key!"},
		{name: "bad value", src: `selector {
  key = "a"
  operator = "in"
  values = ["not valid!"]
}`,
			diags: []string{"Invalid label selector requirement"}, detail: "not valid!"},
		{name: "unknown operator", src: `selector {
  key = "a"
  operator = "like"
  values = ["x"]
}`,
			diags: []string{"Invalid value for operator"}},
		{name: "string and blocks", src: "selector = \"a=b\"\nselector {\n key = \"a\"\n operator = \"exists\"\n}",
			diags: []string{"Conflicting label selectors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, diags := DecodeSelector(content(t, tt.src))
			if diff := cmp.Diff(tt.diags, summaries(diags)); diff != "" {
				t.Fatalf("diagnostics (-want +got):\n%s\n%s", diff, diags)
			}
			if tt.detail != "" && !strings.Contains(diags[0].Detail, tt.detail) {
				t.Errorf("detail %q does not contain %q", diags[0].Detail, tt.detail)
			}
			if len(tt.diags) == 0 && sel.String() != tt.want {
				t.Errorf("selector %q, want %q", sel.String(), tt.want)
			}
		})
	}
}

func TestSelectorMatches(t *testing.T) {
	sel, diags := DecodeSelector(content(t, `
selector {
  key = "env"
  operator = "in"
  values = ["prod", "staging"]
}
selector {
  key = "legacy"
  operator = "!exists"
}
`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tests := []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"env": "prod"}, true},
		{map[string]string{"env": "dev"}, false},
		{map[string]string{"env": "prod", "legacy": "1"}, false},
		{map[string]string{}, false},
	}
	for _, tt := range tests {
		if got := sel.Matches(labels.Set(tt.labels)); got != tt.want {
			t.Errorf("%v: got %v, want %v", tt.labels, got, tt.want)
		}
	}
}

func TestDecodeFieldSelector(t *testing.T) {
	sel, diags := DecodeFieldSelector(content(t, `field_selector = "status.phase=Running,metadata.name!=x"`))
	if diags.HasErrors() || sel.String() != "metadata.name!=x,status.phase=Running" {
		t.Fatalf("got %q %s", sel.String(), diags)
	}
	sel, diags = DecodeFieldSelector(content(t, ``))
	if diags.HasErrors() || !sel.Empty() {
		t.Fatalf("unset: got %q %s", sel.String(), diags)
	}
	_, diags = DecodeFieldSelector(content(t, `field_selector = "a"`))
	if diff := cmp.Diff([]string{"Invalid field selector"}, summaries(diags)); diff != "" {
		t.Fatal(diff)
	}
}
