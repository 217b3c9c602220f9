package configtest

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/schema"
)

// The attributes of given and expect blocks. Their values are literals:
// a test states records and times, it computes nothing.
var (
	testVars = schema.Literal("vars", "map(string)", literalMap("vars")).
			Doc("Variables of the configuration for this test, as on the command line (-var NAME=VALUE); each value is a string.").
			Example(`{ grace = "30s" }`)

	givenAt = schema.Literal("at", "duration", readAt).Required().
		Doc("The virtual time since the test started at which the source reports this. Every given at \"0s\" is the source's initial state; the sources are synced after it.").
		Example(`"5s"`)
	givenAdd = schema.Literal("add", "map(any)", literalMap("add")).
			Doc("Records the source starts to hold, as KEY = VALUE (the record the source would emit). The source must not hold the key yet.").
			Example(`{ "shop/web-1" = { status = { podIP = "10.0.0.7" } } }`)
	givenUpdate = schema.Literal("update", "map(any)", literalMap("update")).
			Doc("Records the source holds with a new value, as KEY = VALUE. The source must hold the key.")
	givenDelete = schema.Literal("delete", "list(string)", literalStrings("delete")).
			Doc("Keys the source stops holding. The source must hold each key.").
			Example(`["shop/web-1"]`)

	expectAt = schema.Literal("at", "duration", readAt).Required().
			Doc("The virtual time since the test started at which the sink's target is checked, with the pipeline at rest.").
			Example(`"35s"`)
	expectState = schema.Literal("state", "map(any)", literalMap("state")).
			Doc("Exactly the entries the target holds, as KEY = VALUE in the target's own form (a BPF map entry's value is its bytes in hex). A literal is converted to the held value's type before comparing.").
			Example(`{ "10.0.0.7" = "01000000" }`)
	expectKeys = schema.Literal("keys", "list(string)", literalStrings("keys")).
			Doc("Exactly the keys the target holds, whatever their values. Give state or keys, not both.").
			Example(`["10.0.0.7"]`)
	expectWrites = schema.Literal("writes", "list(string)", literalStrings("writes")).
			Doc("The entries the sink wrote since this sink's last expect (or since the test started), in order: \"+KEY\" for a write, \"-KEY\" for a delete.").
			Example(`["-10.0.0.7"]`)
	expectContent = schema.Literal("content", "string", readContent).
			Doc("Exactly the file a sink rendering one file (template) would write.").
			Example(`"server web-1 10.0.0.7:80\n"`)
	expectContains = schema.Literal("contains", "list(string)", literalStrings("contains")).
			Doc("Text the rendered file of a sink rendering one file (template) holds: each string must appear in it.").
			Example(`["server web-1 10.0.0.7:80"]`)
)

// givenBlock, expectBlock and testBlock declare a test file's blocks.
var (
	givenBlock = schema.Nested("given", schema.Block{Attrs: []schema.Attribute{givenAt, givenAdd, givenUpdate, givenDelete}}).
			WithLabels("source").Repeated().
			WithDoc("What a source reports at a virtual time; its label is the source's address (\"source.TYPE.NAME\"). Give add, update or delete.")
	expectBlock = schema.Nested("expect", schema.Block{Attrs: []schema.Attribute{expectAt, expectState, expectKeys, expectWrites, expectContent, expectContains}}).
			WithLabels("sink").Repeated().
			WithDoc("What a sink's target holds or wrote at a virtual time; its label is the sink's address (\"sink.TYPE.NAME\"). Give state, keys, writes, content or contains.")
	testBlock = schema.Nested("test", schema.Block{Attrs: []schema.Attribute{testVars}, Blocks: []*schema.BlockType{givenBlock, expectBlock}}).
			WithLabels("name").Repeated().
			WithDoc("One test: a timeline of given and expect blocks, run in the order of their times (blocks at one time in the order written).")
)

// FileBlock is the schema of a config test file (NAME.test.hcl): one or
// more test blocks. The decoder, `pipeline schema` and the language
// server all read it.
var FileBlock = schema.Block{Blocks: []*schema.BlockType{testBlock}}

// readAt reads a virtual time: a duration string such as "150ms".
func readAt(expr hcl.Expression) (time.Duration, hcl.Diagnostics) {
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		return 0, diags
	}
	if v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		if at, err := time.ParseDuration(v.AsString()); err == nil && at >= 0 {
			return at, diags
		}
	}
	return 0, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid time",
		Detail: `Give the virtual time since the test started as a duration string, such as "0s", "150ms" or "31s".`, Subject: expr.Range().Ptr()})
}
