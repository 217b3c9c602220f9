package schema

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

// marksConfig uses every function with a sensitive argument. The secret has
// a quote and a backslash, and one character of it is enough to leak.
const marksConfig = `
variable "s" {
  type      = string
  sensitive = true
}
variable "n" {
  type      = number
  sensitive = true
}
variable "m" {
  type      = map(string)
  sensitive = true
  default   = { alice = "pw" }
}
locals {
  env        = env("NO_SUCH_VARIABLE", var.s)
  file       = can(file(var.s))
  lower      = lower(var.s)
  upper      = upper(var.s)
  join       = join(",", ["a", var.s])
  split      = split(",", var.s)
  format     = format("<%s>", var.s)
  formatlist = formatlist("<%s>", [var.s])
  jsonencode = jsonencode({ v = var.s })
  jsondecode = jsondecode(jsonencode(var.s))
  trimspace  = trimspace(" ${var.s} ")
  replace    = replace(var.s, "x", "y")
  replace_re = replace(var.s, "/x/", "y")
  regex      = regex(".", var.s)
  substr     = substr(var.s, 0, 1)
  length     = length(var.s)
  concat     = concat(["a"], [var.s])
  merge      = merge({ a = "b" }, { c = var.s })
  keys       = keys(var.m)
  values     = values(var.m)
  lookup     = lookup(var.m, "alice", "none")
  contains   = contains(["a"], var.s)
  coalesce   = coalesce("", var.s)
  distinct   = distinct([var.s, var.s])
  flatten    = flatten([[var.s]])
  sort       = sort(["b", var.s])
  tostring   = tostring(var.n)
  tonumber   = tonumber(var.n)
  tobool     = tobool(var.s == "x")
  min        = min(var.n, 100)
  max        = max(var.n, 0)
  cidrsubnet = cidrsubnet("10.0.0.0/8", 8, var.n)
  cidrhost   = cidrhost("10.0.0.0/8", var.n)
  try        = try(var.s, "x")
  can        = can(var.s)
  template   = "a-${var.s}-b"
  cond       = var.n > 1 ? "big" : "small"
  forexpr    = [for c in split("", var.s) : c]
  index      = var.m["alice"]
  arith      = var.n + 1
}
`

func loadMarks(t *testing.T, extra string) (*Config, string) {
	t.Helper()
	src := marksConfig + extra
	cfg, diags := NewLoader().ParseSource("m.hcl", []byte(src), Options{
		Vars: []string{`s=a"\x`, "n=7"}, Environ: []string{}})
	if cfg == nil {
		t.Fatal(diags)
	}
	if len(diags) == 0 {
		return cfg, ""
	}
	return cfg, diags.Error()
}

// TestMarksPropagate checks that each function, operator and expression
// keeps the mark of a sensitive argument, so none drops it on the way to
// a view.
func TestMarksPropagate(t *testing.T) {
	cfg, diags := loadMarks(t, "")
	if diags != "" {
		t.Fatal(diags)
	}
	locals := cfg.Ctx.Variables["local"]
	var names []string
	for it := locals.ElementIterator(); it.Next(); {
		k, v := it.Element()
		names = append(names, k.AsString())
		if !IsSensitive(v) {
			t.Errorf("local.%s = %#v lost the sensitive mark", k.AsString(), v)
		}
	}
	used := map[string]bool{}
	for _, n := range names {
		used[strings.TrimSuffix(n, "_re")] = true
	}
	var missing []string
	for f := range Functions("", nil) {
		if !used[f] {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("functions not checked for marks: %v", missing)
	}
}

// TestFunctionErrorsHideSensitive checks that a function failing on a
// sensitive argument does not quote it in its diagnostic.
func TestFunctionErrorsHideSensitive(t *testing.T) {
	for _, expr := range []string{`tonumber(var.s)`, `cidrsubnet(var.s, 8, 1)`, `cidrhost(var.s, 1)`, `file(var.s)`,
		`tobool(var.s)`, `regex(var.s, "x")`, `jsondecode(var.s)`, `cidrsubnet("10.0.0.0/8", 8, var.n * 1000)`} {
		t.Run(expr, func(t *testing.T) {
			_, diags := loadMarks(t, "locals {\n  bad = "+expr+"\n}\n")
			if diags == "" {
				t.Fatal("no diagnostic")
			}
			for _, leak := range []string{`a"\x`, `a\"\\x`, "7000"} {
				if strings.Contains(diags, leak) {
					t.Errorf("diagnostic shows %q: %s", leak, diags)
				}
			}
			if !strings.Contains(diags, "sensitive") {
				t.Errorf("diagnostic does not say why it is vague: %s", diags)
			}
		})
	}
}

func TestMasked(t *testing.T) {
	s := MarkSensitive(cty.StringVal("Q"))
	in := cty.ObjectVal(map[string]cty.Value{
		"a": s,
		"b": cty.ListVal([]cty.Value{cty.StringVal("x"), cty.StringVal("Q").Mark(SensitiveMark)}),
		"n": MarkSensitive(cty.NumberIntVal(7)),
		"k": cty.StringVal("plain"),
		"m": MarkSensitive(cty.MapVal(map[string]cty.Value{"alice": cty.StringVal("pw")})),
	})
	want := cty.ObjectVal(map[string]cty.Value{
		"a": cty.StringVal(Mask),
		"b": cty.TupleVal([]cty.Value{cty.StringVal("x"), cty.StringVal(Mask)}),
		"n": cty.StringVal(Mask),
		"k": cty.StringVal("plain"),
		"m": cty.StringVal(Mask),
	})
	got := Masked(in)
	if !got.RawEquals(want) {
		t.Error(cmp.Diff(want.GoString(), got.GoString()))
	}
	if diff := cmp.Diff([]string{"Q", "alice", "pw", "7", "Q"}, SensitiveStrings(in), cmp.Transformer("sort", func(in []string) []string {
		out := append([]string(nil), in...)
		sort.Strings(out)
		return out
	})); diff != "" {
		t.Error(diff)
	}
	plain := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x")})
	if got := Masked(plain); !got.RawEquals(plain) {
		t.Errorf("a value without marks changed: %#v", got)
	}
	if got := Masked(cty.NilVal); got != cty.NilVal {
		t.Errorf("Masked(NilVal) = %#v", got)
	}
}

// TestAttrMarks checks the handles: Value keeps marks, the others hand the
// raw value over, and SensitiveValues gives the text of both.
func TestAttrMarks(t *testing.T) {
	cfg, diags := loadMarks(t, "source \"x\" \"y\" {\n  v = { k = upper(var.s) }\n  p = \"/sys/fs/bpf/${lower(var.s)}\"\n}\n")
	if diags != "" {
		t.Fatal(diags)
	}
	vAttr, pAttr := Value("v"), String("p")
	body := Block{Attrs: []Attribute{vAttr, pAttr}}
	c, d := Decode(cfg.Nodes[0].Body, body, cfg.Ctx, cfg.Nodes[0].DeclRange)
	if d.HasErrors() {
		t.Fatal(d)
	}
	v, _, _ := vAttr.Get(c)
	if !IsSensitive(v) || !IsSensitive(v.GetAttr("k")) {
		t.Errorf("Value lost the mark: %#v", v)
	}
	p, _, _ := pAttr.Get(c)
	if p != `/sys/fs/bpf/a"\x` {
		t.Errorf("String gave %q", p)
	}
	if diff := cmp.Diff([]string{`A"\X`, `/sys/fs/bpf/a"\x`}, body.SensitiveValues(c)); diff != "" {
		t.Error(diff)
	}
}

func TestNumberTextSameAsBigFloat(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-1", "42", "1e15", "9007199254740992", "-9007199254740992",
		"9007199254740993", "1e300", "0.5", "-2.75", "123456789.125", "1e-7"} {
		v, err := cty.ParseNumberVal(s)
		if err != nil {
			t.Fatal(err)
		}
		f := v.AsBigFloat()
		if got, want := NumberText(f), f.Text('f', -1); got != want {
			t.Errorf("NumberText(%s) = %q, want %q", s, got, want)
		}
	}
}
