package schema

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// TestFunctionsAsTerraform evaluates every function against the examples
// of Terraform's documentation (developer.hashicorp.com/terraform/language/functions),
// so that a function named like Terraform's behaves like Terraform's. A
// want of "error" means Terraform documents the call as an error. env is
// ours; its rows are our documented behaviour.
func TestFunctionsAsTerraform(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("Hello World"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := &hcl.EvalContext{
		Functions: Functions(dir, map[string]string{"HOME": "/root"}),
		Variables: map[string]cty.Value{"local": cty.ObjectVal(map[string]cty.Value{"foo": cty.ObjectVal(map[string]cty.Value{"bar": cty.StringVal("baz")})})},
	}
	tests := []struct{ fn, expr, want string }{
		{"coalesce", `coalesce("a", "b")`, `"a"`},
		{"coalesce", `coalesce("", "b")`, `"b"`},
		{"coalesce", `coalesce(1, 2)`, `1`},
		{"coalesce", `coalesce(["", "b"]...)`, `"b"`},
		{"coalesce", `coalesce(1, "hello")`, `"1"`},
		{"coalesce", `coalesce(true, "hello")`, `"true"`},
		{"coalesce", `coalesce({}, "hello")`, `error`},
		{"sort", `sort(["e", "d", "a", "x"])`, `["a","d","e","x"]`},
		{"sort", `sort(["2026-12-07T10:00:00Z", "2026-01-01T00:00:00Z"])`, `["2026-01-01T00:00:00Z","2026-12-07T10:00:00Z"]`},
		{"length", `length([])`, `0`},
		{"length", `length(["a", "b"])`, `2`},
		{"length", `length({"a" = "b"})`, `1`},
		{"length", `length("hello")`, `5`},
		{"length", `length("👾🕹️")`, `2`},
		{"replace", `replace("1 + 2 + 3", "+", "-")`, `"1 - 2 - 3"`},
		{"replace", `replace("hello world", "/w.*d/", "everybody")`, `"hello everybody"`},
		{"lower", `lower("HELLO")`, `"hello"`},
		{"lower", `lower("АЛЛО!")`, `"алло!"`},
		{"upper", `upper("hello")`, `"HELLO"`},
		{"upper", `upper("алло!")`, `"АЛЛО!"`},
		{"join", `join("-", ["foo", "bar", "baz"])`, `"foo-bar-baz"`},
		{"join", `join(", ", ["foo", "bar", "baz"])`, `"foo, bar, baz"`},
		{"join", `join(", ", ["foo"])`, `"foo"`},
		{"split", `split(",", "foo")`, `["foo"]`},
		{"split", `split(",", "foo,bar,baz")`, `["foo","bar","baz"]`},
		{"split", `split(",", "foo,")`, `["foo",""]`},
		{"split", `split(",", "")`, `[""]`},
		{"format", `format("Hello, %s!", "Ander")`, `"Hello, Ander!"`},
		{"format", `format("There are %d lights", 4)`, `"There are 4 lights"`},
		{"formatlist", `formatlist("Hello, %s!", ["Valentina", "Ander", "Olivia", "Sam"])`, `["Hello, Valentina!","Hello, Ander!","Hello, Olivia!","Hello, Sam!"]`},
		{"formatlist", `formatlist("%s, %s!", "Salutations", ["Valentina", "Ander", "Olivia", "Sam"])`, `["Salutations, Valentina!","Salutations, Ander!","Salutations, Olivia!","Salutations, Sam!"]`},
		{"jsonencode", `jsonencode({"hello" = "world"})`, `"{\"hello\":\"world\"}"`},
		{"jsondecode", `jsondecode("{\"hello\": \"world\"}")`, `{"hello":"world"}`},
		{"jsondecode", `jsondecode("true")`, `true`},
		{"trimspace", `trimspace("  hello\n\n")`, `"hello"`},
		{"regex", `regex("[a-z]+", "53453453.345345aaabbbccc23454")`, `"aaabbbccc"`},
		{"regex", `regex("(\\d\\d\\d\\d)-(\\d\\d)-(\\d\\d)", "2019-02-01")`, `["2019","02","01"]`},
		{"regex", `regex("^(?:(?P<scheme>[^:/?#]+):)?(?://(?P<authority>[^/?#]*))?", "https://terraform.io/docs/")`, `{"authority":"terraform.io","scheme":"https"}`},
		{"regex", `regex("[a-z]+", "53453453.34534523454")`, `error`},
		{"substr", `substr("hello world", 1, 4)`, `"ello"`},
		{"substr", `substr("🤔🤷", 0, 1)`, `"🤔"`},
		{"substr", `substr("hello world", -5, -1)`, `"world"`},
		{"substr", `substr("hello world", 6, 10)`, `"world"`},
		{"concat", `concat(["a", ""], ["b", "c"])`, `["a","","b","c"]`},
		{"merge", `merge({a = "b", c = "d"}, {e = "f", c = "z"})`, `{"a":"b","c":"z","e":"f"}`},
		{"merge", `merge({a = "b"}, {a = [1, 2], c = "z"}, {d = 3})`, `{"a":[1,2],"c":"z","d":3}`},
		{"keys", `keys({a = 1, c = 2, d = 3})`, `["a","c","d"]`},
		{"values", `values({a = 3, c = 2, d = 1})`, `[3,2,1]`},
		{"lookup", `lookup({a = "ay", b = "bee"}, "a", "what?")`, `"ay"`},
		{"lookup", `lookup({a = "ay", b = "bee"}, "c", "what?")`, `"what?"`},
		{"contains", `contains(["a", "b", "c"], "a")`, `true`},
		{"contains", `contains(["a", "b", "c"], "d")`, `false`},
		{"distinct", `distinct(["a", "b", "a", "c", "d", "b"])`, `["a","b","c","d"]`},
		{"flatten", `flatten([["a", "b"], [], ["c"]])`, `["a","b","c"]`},
		{"flatten", `flatten([[["a", "b"], []], ["c"]])`, `["a","b","c"]`},
		{"min", `min(12, 54, 3)`, `3`},
		{"min", `min([12, 54, 3]...)`, `3`},
		{"max", `max(12, 54, 3)`, `54`},
		{"max", `max([12, 54, 3]...)`, `54`},
		{"tostring", `tostring("hello")`, `"hello"`},
		{"tostring", `tostring(1)`, `"1"`},
		{"tostring", `tostring(true)`, `"true"`},
		{"tostring", `tostring(null)`, `null`},
		{"tostring", `tostring([])`, `error`},
		{"tonumber", `tonumber(1)`, `1`},
		{"tonumber", `tonumber("1")`, `1`},
		{"tonumber", `tonumber(null)`, `null`},
		{"tonumber", `tonumber("no")`, `error`},
		{"tobool", `tobool(true)`, `true`},
		{"tobool", `tobool("true")`, `true`},
		{"tobool", `tobool(null)`, `null`},
		{"tobool", `tobool("no")`, `error`},
		{"tobool", `tobool(1)`, `error`},
		{"cidrsubnet", `cidrsubnet("172.16.0.0/12", 4, 2)`, `"172.18.0.0/16"`},
		{"cidrsubnet", `cidrsubnet("10.1.2.0/24", 4, 15)`, `"10.1.2.240/28"`},
		{"cidrsubnet", `cidrsubnet("fd00:fd12:3456:7890::/56", 16, 162)`, `"fd00:fd12:3456:7800:a200::/72"`},
		{"cidrhost", `cidrhost("10.12.112.0/20", 16)`, `"10.12.112.16"`},
		{"cidrhost", `cidrhost("10.12.112.0/20", 268)`, `"10.12.113.12"`},
		{"cidrhost", `cidrhost("fd00:fd12:3456:7890:00a2::/72", 34)`, `"fd00:fd12:3456:7890::22"`},
		{"cidrhost", `cidrhost("10.0.0.0/8", 2)`, `"10.0.0.2"`},
		{"cidrhost", `cidrhost("10.0.0.0/8", -2)`, `"10.255.255.254"`},
		{"try", `try(local.foo.bar, "fallback")`, `"baz"`},
		{"try", `try(local.foo.boop, "fallback")`, `"fallback"`},
		{"can", `can(local.foo.bar)`, `true`},
		{"can", `can(local.foo.boop)`, `false`},
		{"file", `file("hello.txt")`, `"Hello World"`},
		{"env", `env("HOME")`, `"/root"`},
		{"env", `env("NOPE", "default")`, `"default"`},
		{"env", `env("NOPE")`, `""`},
	}
	tested := map[string]bool{}
	for _, tc := range tests {
		tested[tc.fn] = true
		t.Run(tc.expr, func(t *testing.T) {
			expr, diags := hclsyntax.ParseExpression([]byte(tc.expr), "test.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			v, diags := expr.Value(ctx)
			got := "error"
			if !diags.HasErrors() {
				got = jsonOf(t, v)
			}
			if got != tc.want {
				t.Errorf("%s = %s, want %s (%s)", tc.expr, got, tc.want, diags.Error())
			}
		})
	}
	for name := range ctx.Functions {
		if !tested[name] {
			t.Errorf("function %s has no example in this table", name)
		}
	}
}

func jsonOf(t *testing.T, v cty.Value) string {
	t.Helper()
	if v.IsNull() {
		return "null"
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFunctionsListedInDocs: the language guide lists every function.
func TestFunctionsListedInDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range slices.Sorted(maps.Keys(Functions("", nil))) {
		if !strings.Contains(string(b), "`"+n+"`") {
			t.Errorf("docs/language.md does not list the function %s", n)
		}
	}
}

func TestEveryFunctionClassified(t *testing.T) {
	funcs := Functions("", nil)
	for name := range funcs {
		if _, ok := purity[name]; !ok {
			t.Errorf("function %s: say in purity whether it is pure", name)
		}
	}
	for name := range purity {
		if _, ok := funcs[name]; !ok {
			t.Errorf("purity names %s, which is no function", name)
		}
	}
}
