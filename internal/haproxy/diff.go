package haproxy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// An Update is what it takes to turn a running HAProxy loaded from one
// file into one loaded from another: the runtime operations, or the
// reason a reload is needed instead.
type Update struct {
	Ops []Op
	// Reload says why the runtime API cannot make the change; "" when Ops
	// make it all (no Ops and no Reload: the files mean the same).
	Reload string
}

// Diff compares the file HAProxy runs (old) with a new one. The ops it
// returns are ordered so that no backend loses all its servers on the
// way: per backend, additions first, then changes, then removals. It
// never panics, whatever the input.
func Diff(old, new []byte) Update {
	if string(old) == string(new) {
		return Update{}
	}
	return DiffConfigs(Parse(old), Parse(new))
}

// DiffConfigs is Diff of two parsed files: a caller that keeps the parsed
// file HAProxy runs parses only the new one. Only the sections that
// differ as written are read.
func DiffConfigs(oc, nc *Config) Update {
	if same(oc, nc) {
		return Update{}
	}
	for _, c := range []*Config{nc, oc} {
		if c.opaque != "" {
			return Update{Reload: c.opaque}
		}
	}
	if why := sameSections(oc, nc); why != "" {
		return Update{Reload: why}
	}
	var u Update
	for i, ns := range nc.Sections {
		os := oc.Sections[i]
		if os.body == ns.body {
			continue
		}
		ops, why := diffSection(os, ns)
		if why != "" {
			return Update{Reload: why}
		}
		u.Ops = append(u.Ops, ops...)
	}
	return u
}

// same says whether the two files' sections are the same as written.
func same(oc, nc *Config) bool {
	if len(oc.Sections) != len(nc.Sections) {
		return false
	}
	for i, ns := range nc.Sections {
		if os := oc.Sections[i]; os.Header != ns.Header || os.body != ns.body {
			return false
		}
	}
	return true
}

// diffSection returns the ops that turn section os into ns (the same
// section of the two files), or why it takes a reload.
func diffSection(os, ns *Section) ([]Op, string) {
	if err := os.parse(); err != nil {
		return nil, "running file: " + err.Error()
	}
	if err := ns.parse(); err != nil {
		return nil, err.Error()
	}
	if why := sameDirectives(ns, os.directives, ns.directives); why != "" {
		return nil, why
	}
	if !hasServers(ns.Kind) || ns.opaque {
		return nil, ""
	}
	return diffServers(os, ns)
}

// sameSections says how the two files' sections differ in their kinds,
// names or order, or returns "".
func sameSections(oc, nc *Config) string {
	if len(oc.Sections) == len(nc.Sections) {
		same := true
		for i, ns := range nc.Sections {
			if oc.Sections[i].Header != ns.Header {
				same = false
				break
			}
		}
		if same {
			return ""
		}
	}
	index := func(c *Config) map[string]*Section {
		m := make(map[string]*Section, len(c.Sections))
		for _, s := range c.Sections {
			m[s.Header] = s
		}
		return m
	}
	om, nm := index(oc), index(nc)
	for _, s := range nc.Sections {
		if om[s.Header] == nil {
			return fmt.Sprintf("line %d: %s added", s.Line, describe(s))
		}
	}
	for _, s := range oc.Sections {
		if nm[s.Header] == nil {
			return fmt.Sprintf("%s removed", describe(s))
		}
	}
	if len(oc.Sections) != len(nc.Sections) {
		return "the number of sections changed"
	}
	for i, ns := range nc.Sections {
		if oc.Sections[i].Header != ns.Header {
			return fmt.Sprintf("line %d: %s moved", ns.Line, describe(ns))
		}
	}
	return ""
}

// sameDirectives says how the directives n of section s differ from o,
// or returns "". A line is normalized only when it differs as written.
func sameDirectives(s *Section, o, n []Directive) string {
	for j, d := range n {
		if j >= len(o) || (o[j].Text != d.Text && normalized(o[j].Text) != normalized(d.Text)) {
			return fmt.Sprintf("line %d: %s changed: %s", d.Line, describe(s), normalized(d.Text))
		}
	}
	if len(o) > len(n) {
		return fmt.Sprintf("%s changed: %s removed", describe(s), normalized(o[len(n)].Text))
	}
	return ""
}

func describe(s *Section) string {
	switch {
	case s.Kind == "":
		return "the lines before the first section"
	case s.Name == "":
		return "section " + s.Kind
	}
	return fmt.Sprintf("%s %s", s.Kind, s.Name)
}

// diffServers returns the ops that turn os's servers into ns's (the same
// section in both files), or why it takes a reload.
func diffServers(os, ns *Section) ([]Op, string) {
	old := make(map[string]Server, len(os.servers))
	for _, s := range os.servers {
		old[s.Name] = s
	}
	var adds, changes, dels []Op
	for _, s := range ns.servers {
		o, ok := old[s.Name]
		delete(old, s.Name)
		var ops []Op
		var why string
		if ok {
			ops, why = change(ns, o, s)
		} else {
			ops, why = add(ns, s)
			adds = append(adds, ops...)
			ops = nil
		}
		if why != "" {
			return nil, fmt.Sprintf("line %d: server %s/%s: %s", s.Line, ns.Name, s.Name, why)
		}
		changes = append(changes, ops...)
	}
	for _, s := range os.servers {
		if _, gone := old[s.Name]; !gone {
			continue
		}
		if !validName(ns.Name) || !validName(s.Name) {
			return nil, fmt.Sprintf("server %s/%s removed: its name cannot be sent to the runtime API", ns.Name, s.Name)
		}
		dels = append(dels, Op{Action: DelServer, Backend: ns.Name, Server: s.Name})
	}
	return slices.Concat(adds, changes, dels), ""
}

// change returns the ops that turn server o into s, or why it takes a
// reload.
func change(sec *Section, o, s Server) ([]Op, string) {
	if o.Text == s.Text {
		return nil, ""
	}
	if o.Opaque || s.Opaque {
		return nil, "quotes, escapes or variables changed"
	}
	if o.rest() != s.rest() {
		return nil, fmt.Sprintf("options the runtime API cannot set changed (%q -> %q)", o.rest(), s.rest())
	}
	if !validName(sec.Name) || !validName(s.Name) {
		return nil, "its name cannot be sent to the runtime API"
	}
	var ops []Op
	if o.Addr != s.Addr {
		oa, ok1 := o.addrPort()
		na, ok2 := s.addrPort()
		if !ok1 || !ok2 {
			return nil, fmt.Sprintf("address %s -> %s: the runtime API sets only an IP address with a port", o.Addr, s.Addr)
		}
		if oa != na {
			ops = append(ops, Op{Action: SetAddr, Backend: sec.Name, Server: s.Name, Addr: na})
		}
	}
	om, nm := sec.merged(o), sec.merged(s)
	ow, ok1 := om.weight()
	nw, ok2 := nm.weight()
	if !ok1 || !ok2 {
		return nil, "weight is not a number from 0 to 256"
	}
	if ow != nw {
		if why := sec.dynamic(); why != "" {
			return nil, "weight changed: " + why
		}
		ops = append(ops, Op{Action: SetWeight, Backend: sec.Name, Server: s.Name, Weight: nw})
	}
	if om.disabled() != nm.disabled() {
		ops = append(ops, Op{Action: SetState, Backend: sec.Name, Server: s.Name, Disabled: nm.disabled()})
	}
	return ops, ""
}

// addable are the server options `add server` is given, each with the
// form of its argument ("" for none).
var addable = map[string]*regexp.Regexp{
	"check": nil, "weight": number, "maxconn": number, "minconn": number, "maxqueue": number,
	"rise": number, "fall": number, "inter": duration, "fastinter": duration, "downinter": duration,
}

var (
	number   = regexp.MustCompile(`^[0-9]{1,9}$`)
	duration = regexp.MustCompile(`^[0-9]{1,9}(us|ms|s|m|h|d)?$`)
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,200}$`)
)

// validName says whether a backend or server name can be sent to the
// runtime API as it is: HAProxy's own name characters, nothing the CLI
// would read as a separator.
func validName(s string) bool { return nameRE.MatchString(s) }

// add returns the op adding s to sec, or why it takes a reload.
func add(sec *Section, s Server) ([]Op, string) {
	switch {
	case s.Opaque:
		return nil, "added with quotes, escapes or variables"
	case !validName(sec.Name) || !validName(s.Name):
		return nil, "its name cannot be sent to the runtime API"
	}
	if why := sec.dynamic(); why != "" {
		return nil, "added: " + why
	}
	ap, ok := s.addrPort()
	if !ok {
		return nil, fmt.Sprintf("added with address %s: the runtime API adds only an IP address with a port", s.Addr)
	}
	m := sec.merged(s)
	w, ok := m.weight()
	if !ok {
		return nil, "weight is not a number from 0 to 256"
	}
	opts, why := addOptions(m.Options)
	if why != "" {
		return nil, why
	}
	return []Op{{Action: AddServer, Backend: sec.Name, Server: s.Name, Addr: ap, Weight: w, Disabled: m.disabled(), Options: opts}}, ""
}

// addOptions returns the options `add server` is given for a server
// with opts (default-server's first): each keyword once, the last one
// written winning, as in the file; state is set apart.
func addOptions(opts []string) ([]string, string) {
	type option struct{ key, arg string }
	var list []option
	at := map[string]int{}
	for i := 0; i < len(opts); i++ {
		k := opts[i]
		if k == "disabled" || k == "enabled" {
			continue
		}
		form, known := addable[k]
		if !known {
			return nil, fmt.Sprintf("added with option %s, which this package does not add at run time", k)
		}
		o := option{key: k}
		if form != nil {
			if i+1 >= len(opts) || !form.MatchString(opts[i+1]) {
				return nil, fmt.Sprintf("option %s has no valid argument", k)
			}
			i++
			o.arg = opts[i]
		}
		if j, seen := at[k]; seen {
			list[j] = o
			continue
		}
		at[k] = len(list)
		list = append(list, o)
	}
	var out []string
	for _, o := range list {
		out = append(out, o.key)
		if o.arg != "" {
			out = append(out, o.arg)
		}
	}
	return out, ""
}

// Describe is the update in one line: the ops, or why it takes a reload.
func (u Update) Describe() string {
	if u.Reload != "" {
		return "reload: " + u.Reload
	}
	parts := make([]string, len(u.Ops))
	for i, o := range u.Ops {
		parts[i] = o.String()
	}
	return "runtime: " + strings.Join(parts, ", ")
}
