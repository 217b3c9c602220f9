package ebpfmap

import (
	"github.com/cilium/ebpf"

	"github.com/pipeline/pipeline/engine/node"
)

// Describe implements node.Describer: the pin, the map type and its
// capacity; a map not pinned yet is one run would create.
func (t *Target) Describe() node.TargetInfo {
	info := node.TargetInfo{Location: t.s.pin, Kind: mapTypeName(t.s.spec.Type), Exists: t.m != nil,
		MaxEntries: int(t.s.spec.MaxEntries)}
	if t.replaced != "" {
		info.Exists = true
		info.Replace = "the pinned map differs from the declaration (" + t.replaced + ") and on_mismatch = \"recreate\": run removes it and creates an empty one"
	}
	return info
}

// noteReplaced says that the pinned map was replaced: at WARN, and as a
// decision (the audit trail, /reloads), since programs that hold the old
// map keep using it until they reopen the pin.
func (t *Target) noteReplaced(env node.Env) {
	msg := "pinned map replaced: it differed from the declaration (" + t.replaced + "); programs holding the old map keep it until they reopen the pin"
	env.Logger.Warn("pinned map replaced; programs holding the old map keep it until they reopen the pin",
		"pin", t.s.pin, "mismatch", t.replaced)
	env.Decide(node.Decision{Kind: node.DecisionTargetReplaced, Node: t.s.address, Detail: msg,
		Attrs: map[string]string{"pin": t.s.pin, "mismatch": t.replaced}})
}

// Show implements node.Describer: the value decoded as declared (a u32 in
// decimal, a struct as name=value pairs), or the hex of its bytes when the
// entry holds several CPUs' differing copies.
func (t *Target) Show(e node.Entry) string {
	if !t.prepared(e) {
		if e.Value.IsNull() || !e.Value.IsKnown() {
			return ""
		}
		return e.Value.AsString()
	}
	_, v := t.split(e)
	return t.s.value.enc.canonical(v)
}

// mapTypeName is the declared name of a map type ("lpm_trie").
func mapTypeName(typ ebpf.MapType) string {
	for name, mt := range mapTypes {
		if mt == typ {
			return name
		}
	}
	return typ.String()
}

var _ node.Describer = (*Target)(nil)
