package ebpfmap

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	pinAttr = schema.String("pin").Required().
		Doc("Path of the pinned map on a bpffs. Created (with its directory) when absent; when present, its type, sizes, max_entries and flags must match.").
		Example(`"/sys/fs/bpf/pipeline/allowed"`)
	typeAttr = schema.Enum("type", "hash", "lru_hash", "lpm_trie", "array").Default("hash", `"hash"`).
			Doc("Map type. lpm_trie needs a *_prefix key; array needs a u32 key (a delete writes a zero value).")
	maxEntriesAttr = schema.Int("max_entries").Default(65536, "65536").
			Doc("Capacity. When the map is full the entries that fit stay, the rest fail and retry, and the sink is degraded.")
	onMismatchAttr = schema.Enum("on_mismatch", "error", "recreate").Default("error", `"error"`).
			Doc("What to do when the pinned map differs from this declaration. `recreate` replaces the pin with a new map; programs holding the old map keep the old one.")
	colType  = schema.String("type").Required().Doc("Encoding: " + strings.Join(scalarTypes, ", ") + ".")
	colFrom  = schema.Expr("from", "record").Doc("Expression over `record` (record.key, record.value) giving the value to encode, or a constant. Default: record.key for the key.")
	colOrder = schema.Enum("byte_order", "host", "be", "le").Default("host", `"host"`).Doc("Byte order of u16/u32/u64.")
	fieldBlk = schema.Nested("field", schema.Block{Attrs: []schema.Attribute{colType, colFrom, colOrder}}).
			Repeated().WithLabels("name").WithDoc("A field of a struct, in C declaration order.")
	columnBody = schema.Block{Attrs: []schema.Attribute{colType, colFrom, colOrder}, Blocks: []*schema.BlockType{fieldBlk}}
	keyBlk     = schema.Nested("key", columnBody).MustAppear().WithDoc("Encoding of the map key.")
	valueBlk   = schema.Nested("value", columnBody).MustAppear().WithDoc("Encoding of the map value.")
)

// Spec declares sink "ebpf_map".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "ebpf_map",
		Summary: "Keeps a pinned kernel BPF map equal to its input records.",
		Doc: "Needs root or CAP_BPF and a bpffs (`mount -t bpf bpf /sys/fs/bpf`); validate and plan of an absent map need neither. " +
			"A record that cannot be encoded is skipped, counted and logged, never written half. " +
			"Metrics: pipeline_sink_map_entries, pipeline_sink_map_capacity_ratio, pipeline_sink_map_batch_size, pipeline_sink_map_full_total.",
		Body: schema.Block{
			Attrs:  []schema.Attribute{pinAttr, typeAttr, maxEntriesAttr, onMismatchAttr},
			Blocks: []*schema.BlockType{keyBlk, valueBlk},
		},
		Accepts: []node.DataType{node.Records},
		New:     newSink,
	}
}

var mapTypes = map[string]ebpf.MapType{"hash": ebpf.Hash, "lru_hash": ebpf.LRUHash, "lpm_trie": ebpf.LPMTrie, "array": ebpf.Array}

func newSink(b node.Build) (any, hcl.Diagnostics) {
	c := b.Content
	s := &Sink{address: b.Address, ctx: b.Content.Ctx}
	var diags hcl.Diagnostics
	add := func(d hcl.Diagnostics) { diags = append(diags, d...) }
	var pinRange, typeRange, maxRange hcl.Range
	var d hcl.Diagnostics
	s.pin, pinRange, d = pinAttr.Get(c)
	add(d)
	var typ string
	typ, typeRange, d = typeAttr.Get(c)
	add(d)
	var maxEntries int64
	maxEntries, maxRange, d = maxEntriesAttr.Get(c)
	add(d)
	var mismatch string
	mismatch, _, d = onMismatchAttr.Get(c)
	add(d)
	s.recreate = mismatch == "recreate"
	if s.pin != "" && !filepath.IsAbs(s.pin) {
		add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid pin path",
			Detail: "pin must be an absolute path on a bpffs, such as /sys/fs/bpf/pipeline/allowed.", Subject: pinRange.Ptr()}})
	}
	if maxEntries < 1 || maxEntries > 1<<28 {
		add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid max_entries",
			Detail: "max_entries must be between 1 and 268435456.", Subject: maxRange.Ptr()}})
	}
	var ok bool
	if s.key, ok = decodeColumn(keyBlk, c, &diags, true); ok {
		add(checkKey(typ, s.key, typeRange))
	}
	s.value, _ = decodeColumn(valueBlk, c, &diags, false)
	if diags.HasErrors() {
		return nil, diags
	}
	s.spec = &ebpf.MapSpec{Name: mapName(s.pin), Type: mapTypes[typ], KeySize: uint32(s.key.enc.size),
		ValueSize: uint32(s.value.enc.size), MaxEntries: uint32(maxEntries)}
	if typ == "lpm_trie" {
		s.spec.Flags = 1 // BPF_F_NO_PREALLOC, required by LPM tries
	}
	return s, diags
}

func checkKey(typ string, key *column, rng hcl.Range) hcl.Diagnostics {
	bad := ""
	switch {
	case typ == "lpm_trie" && !key.enc.isPrefix():
		bad = fmt.Sprintf("An lpm_trie needs a prefix key (ipv4_prefix, ipv6_prefix or ip_prefix), not %s.", key.enc.name)
	case typ == "array" && key.enc.name != "u32":
		bad = fmt.Sprintf("An array map is indexed by a u32 key, not %s.", key.enc.name)
	case typ != "lpm_trie" && key.enc.isPrefix():
		bad = fmt.Sprintf("A %s key only makes sense in an lpm_trie; use type = \"lpm_trie\" or an address key.", key.enc.name)
	}
	if bad == "" {
		return nil
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Key encoding does not fit the map type", Detail: bad, Subject: rng.Ptr()}}
}

// mapName derives the kernel's 15-character object name from the pin.
func mapName(pin string) string {
	var b strings.Builder
	for _, r := range filepath.Base(pin) {
		if r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
		if b.Len() == 15 {
			break
		}
	}
	return b.String()
}

// column is a declared key or value: its encoding and the expressions that
// produce it from a record.
type column struct {
	enc    *encoding
	from   hcl.Expression   // scalar
	fields []hcl.Expression // struct, parallel to enc.fields
}

func decodeColumn(bt *schema.BlockType, c *schema.Content, diags *hcl.Diagnostics, isKey bool) (*column, bool) {
	blocks := bt.Get(c)
	if len(blocks) == 0 {
		return nil, false // reported as a missing block
	}
	bc := blocks[0]
	typ, trng, d := colType.Get(bc)
	*diags = append(*diags, d...)
	if typ != "struct" {
		enc, from, ok := decodeScalar(bc, typ, trng, diags)
		if !ok {
			return nil, false
		}
		if len(fieldBlk.Get(bc)) > 0 {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Fields on a non-struct type",
				Detail: "field blocks apply only to type = \"struct\".", Subject: fieldBlk.Get(bc)[0].Range.Ptr()})
			return nil, false
		}
		if from == nil {
			if !isKey {
				*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing value source",
					Detail: "The value needs from = <expression over record or a constant>, such as from = 1.", Subject: bc.Range.Ptr()})
				return nil, false
			}
			from = recordKey
		}
		return &column{enc: enc, from: from}, true
	}
	return decodeStruct(bc, trng, diags)
}

var recordKey = mustTraversal("record.key")

func mustTraversal(s string) hcl.Expression {
	e, diags := hclsyntax.ParseExpression([]byte(s), "<default>", hcl.InitialPos)
	if diags.HasErrors() {
		panic(diags.Error())
	}
	return e
}

func decodeScalar(bc *schema.Content, typ string, trng hcl.Range, diags *hcl.Diagnostics) (*encoding, hcl.Expression, bool) {
	order, orng, d := colOrder.Get(bc)
	*diags = append(*diags, d...)
	if !colOrder.Has(bc) {
		order = ""
	}
	enc, err := parseScalar(typ, order)
	if err != nil {
		rng := trng
		if strings.HasPrefix(err.Error(), "byte_order") {
			rng = orng
		}
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid encoding", Detail: err.Error() + ".", Subject: rng.Ptr()})
		return nil, nil, false
	}
	from, _, d := colFrom.Get(bc)
	*diags = append(*diags, d...)
	return enc, from, !d.HasErrors()
}

func decodeStruct(bc *schema.Content, trng hcl.Range, diags *hcl.Diagnostics) (*column, bool) {
	blocks := fieldBlk.Get(bc)
	if len(blocks) == 0 {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty struct",
			Detail: "A struct needs at least one field \"NAME\" { type = ..., from = ... } block.", Subject: trng.Ptr()})
		return nil, false
	}
	var fields []field
	var exprs []hcl.Expression
	ok := true
	seen := map[string]bool{}
	for _, fb := range blocks {
		name := fb.Labels[0]
		if seen[name] {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate struct field",
				Detail: fmt.Sprintf("The field %q is declared twice.", name), Subject: fb.LabelRanges[0].Ptr()})
			ok = false
		}
		seen[name] = true
		typ, frng, d := colType.Get(fb)
		*diags = append(*diags, d...)
		if typ == "struct" {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Nested struct",
				Detail: "Struct fields must be scalar types.", Subject: frng.Ptr()})
			ok = false
			continue
		}
		enc, from, fok := decodeScalar(fb, typ, frng, diags)
		if !fok {
			ok = false
			continue
		}
		if from == nil {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing field source",
				Detail: fmt.Sprintf("The field %q needs from = <expression over record or a constant>.", name), Subject: fb.Range.Ptr()})
			ok = false
			continue
		}
		fields = append(fields, field{name: name, enc: enc})
		exprs = append(exprs, from)
	}
	if !ok {
		return nil, false
	}
	return &column{enc: layoutStruct(fields), fields: exprs}, true
}
