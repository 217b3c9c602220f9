package ebpfmap

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	pinAttr = schema.String("pin").Required().
		Doc("Path of the pinned map on a bpffs. Created (with its directory) when absent; when present, its type, key and value sizes, max_entries and flags must match.").
		Example(`"/sys/fs/bpf/pipeline/allowed"`)
	typeAttr = schema.Enum("type", mapTypeNames...).Default("hash", `"hash"`).
			Doc("Map type. lpm_trie needs a *_prefix key; array and percpu_array need a host-order u32 key below max_entries (a delete writes a zero value). Per-CPU maps get the same value on every CPU.")
	maxEntriesAttr = schema.Int("max_entries").Default(65536, "65536").
			Doc("Capacity. When the map is full the entries that fit stay, the rest fail and retry, and the sink is degraded.")
	onMismatchAttr = schema.Enum("on_mismatch", "error", "recreate").Default("error", `"error"`).
			Doc("What to do when the pinned map differs from this declaration. `recreate` replaces the pin with a new map; programs holding the old map keep the old one until they are reloaded.")
	mapFlagsAttr = schema.StringList("map_flags").Default(nil, "[]").
			Doc("Extra BPF_F_* creation flags, by name: " + strings.Join(flagNames(), ", ") + ". lpm_trie always has no_prealloc.").
			Example(`["no_common_lru"]`)
	keyBlk   = schema.Nested("key", columnBody).MustAppear().WithDoc("Encoding of the map key.")
	valueBlk = schema.Nested("value", columnBody).MustAppear().WithDoc("Encoding of the map value.")
)

// Spec declares sink "ebpf_map".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "ebpf_map",
		Summary: "Keeps a pinned kernel BPF map equal to its input records.",
		Doc: "Needs root or CAP_BPF and a bpffs (`mount -t bpf bpf /sys/fs/bpf`); validate needs neither. " +
			"A record that cannot be encoded is skipped, counted and logged, never written half. " +
			"Metrics: pipeline_sink_map_entries, pipeline_sink_map_capacity_ratio, pipeline_sink_map_batch_size, pipeline_sink_map_full_total.",
		Body: schema.Block{
			Attrs:  []schema.Attribute{pinAttr, typeAttr, maxEntriesAttr, onMismatchAttr, mapFlagsAttr},
			Blocks: []*schema.BlockType{keyBlk, valueBlk},
		},
		Accepts: []node.DataType{node.Records},
		NewSink: newSink,
	}
}

var (
	mapTypeNames = []string{"hash", "lru_hash", "lpm_trie", "array", "percpu_hash", "lru_percpu_hash", "percpu_array"}
	mapTypes     = map[string]ebpf.MapType{"hash": ebpf.Hash, "lru_hash": ebpf.LRUHash, "lpm_trie": ebpf.LPMTrie,
		"array": ebpf.Array, "percpu_hash": ebpf.PerCPUHash, "lru_percpu_hash": ebpf.LRUCPUHash, "percpu_array": ebpf.PerCPUArray}
)

// A mapFlag is a BPF_F_* creation flag and the map types that accept it.
type mapFlag struct {
	bit   uint32
	types []string // nil: every type
}

const flagNoPrealloc = 1 << 0 // BPF_F_NO_PREALLOC

var mapFlags = map[string]mapFlag{
	"no_prealloc":   {flagNoPrealloc, []string{"hash", "percpu_hash", "lpm_trie"}},
	"no_common_lru": {1 << 1, []string{"lru_hash", "lru_percpu_hash"}},
	"zero_seed":     {1 << 6, []string{"hash", "lru_hash", "percpu_hash", "lru_percpu_hash"}},
	"rdonly_prog":   {1 << 7, nil},
	"wronly_prog":   {1 << 8, nil},
	"mmapable":      {1 << 10, []string{"array"}},
}

func flagNames() []string {
	names := make([]string, 0, len(mapFlags))
	for n := range mapFlags {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func newSink(b node.Build) (node.Sink, hcl.Diagnostics) {
	c := b.Content
	s := &Sink{address: b.Address, ctx: c.Ctx}
	var diags hcl.Diagnostics
	var pinRange, typeRange, maxRange, flagsRange hcl.Range
	var d hcl.Diagnostics
	s.pin, pinRange, d = pinAttr.Get(c)
	diags = append(diags, d...)
	typ, typeRange, d := typeAttr.Get(c)
	diags = append(diags, d...)
	maxEntries, maxRange, maxDiags := maxEntriesAttr.Get(c)
	diags = append(diags, maxDiags...)
	mismatch := onMismatchAttr.Read(c, &diags)
	flagList, flagsRange, d := mapFlagsAttr.Get(c)
	diags = append(diags, d...)
	s.recreate = mismatch == "recreate"
	if s.pin != "" && !filepath.IsAbs(s.pin) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid pin path",
			Detail: "pin must be an absolute path on a bpffs, such as /sys/fs/bpf/pipeline/allowed.", Subject: pinRange.Ptr()})
	}
	s.pinRange = pinRange
	if s.pin != "" && filepath.IsAbs(s.pin) && !underBPFFS(s.pin) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Pin path outside the BPF filesystem",
			Detail:  fmt.Sprintf("%s is not under %s, where a bpffs is usually mounted; pinning fails unless a bpffs is mounted there.", s.pin, bpffsRoot),
			Subject: pinRange.Ptr()})
	}
	if !maxDiags.HasErrors() && (maxEntries < 1 || maxEntries > 1<<28) { // one message per attribute
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid max_entries",
			Detail: "max_entries must be between 1 and 268435456.", Subject: maxRange.Ptr()})
	}
	flags, d := decodeFlags(typ, flagList, flagsRange)
	diags = append(diags, d...)
	var ok bool
	if s.key, ok = decodeColumn(keyBlk, c, &diags, true); ok {
		rng := typeRange // the map type as written, else the key's type
		if !typeAttr.Has(c) {
			rng = s.key.rng
		}
		diags = append(diags, checkKey(typ, s.key, rng)...)
	}
	s.value, _ = decodeColumn(valueBlk, c, &diags, false)
	if diags.HasErrors() {
		return nil, diags
	}
	s.spec = &ebpf.MapSpec{Name: mapName(s.pin), Type: mapTypes[typ], KeySize: uint32(s.key.enc.size),
		ValueSize: uint32(s.value.enc.size), MaxEntries: uint32(maxEntries), Flags: flags}
	return s, diags
}

// decodeFlags turns flag names into BPF_F_* bits, checking each against the
// map type. An lpm_trie always gets no_prealloc, which the kernel requires.
func decodeFlags(typ string, names []string, rng hcl.Range) (uint32, hcl.Diagnostics) {
	var bits uint32
	var diags hcl.Diagnostics
	bad := func(summary, detail string) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()})
	}
	for _, n := range names {
		f, ok := mapFlags[n]
		switch {
		case !ok:
			detail := fmt.Sprintf("%q is not a map flag; the flags are %s.", n, strings.Join(flagNames(), ", "))
			if s := schema.DidYouMean(n, flagNames()); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s)
			}
			bad("Unknown map flag", detail)
		case f.types != nil && !slices.Contains(f.types, typ):
			bad("Map flag does not fit the map type", fmt.Sprintf("%s applies to %s maps, not %s.", n, strings.Join(f.types, ", "), typ))
		default:
			bits |= f.bit
		}
	}
	if bits&mapFlags["rdonly_prog"].bit != 0 && bits&mapFlags["wronly_prog"].bit != 0 {
		bad("Conflicting map flags", "rdonly_prog and wronly_prog exclude each other.")
	}
	if typ == "lpm_trie" {
		bits |= flagNoPrealloc
	}
	return bits, diags
}

// maxKeySize is the kernel's limit for hash and LPM keys (MAX_BPF_STACK):
// a program must be able to hold the key on its stack.
const maxKeySize = 512

func checkKey(typ string, key *column, rng hcl.Range) hcl.Diagnostics {
	bad := ""
	isArray := typ == "array" || typ == "percpu_array"
	switch {
	case typ == "lpm_trie" && !key.enc.isPrefix():
		bad = fmt.Sprintf("An lpm_trie needs a prefix key (ipv4_prefix, ipv6_prefix or ip_prefix), not %s.", key.enc.name)
	case isArray && (key.enc.name != "u32" || !key.enc.hostOrder()):
		bad = fmt.Sprintf("An %s map is indexed by a host-order u32 key, not %s.", typ, key.enc.describe())
	case typ != "lpm_trie" && key.enc.isPrefix():
		bad = fmt.Sprintf("A %s key only makes sense in an lpm_trie; use type = \"lpm_trie\" or an address key.", key.enc.name)
	case key.enc.size > maxKeySize:
		bad = fmt.Sprintf("The key is %d bytes; the kernel allows at most %d.", key.enc.size, maxKeySize)
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
