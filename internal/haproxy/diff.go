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
	oc, err := Parse(old)
	if err != nil {
		return Update{Reload: "running file: " + err.Error()}
	}
	nc, err := Parse(new)
	if err != nil {
		return Update{Reload: err.Error()}
	}
	for _, c := range []*Config{nc, oc} {
		if c.opaque != "" {
			return Update{Reload: c.opaque}
		}
	}
	if why := sameSkeleton(oc, nc); why != "" {
		return Update{Reload: why}
	}
	var u Update
	for i, ns := range nc.Sections {
		if !hasServers(ns.Kind) || ns.opaque {
			continue
		}
		ops, why := diffServers(oc.Sections[i], ns)
		if why != "" {
			return Update{Reload: why}
		}
		u.Ops = append(u.Ops, ops...)
	}
	return u
}

// sameSkeleton says how the two files differ in anything but the server
// lines of backends, or returns "".
func sameSkeleton(oc, nc *Config) string {
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
		os := oc.Sections[i]
		if os.Header != ns.Header {
			return fmt.Sprintf("line %d: %s moved", ns.Line, describe(ns))
		}
		for j, d := range ns.Directives {
			if j >= len(os.Directives) || os.Directives[j].Text != d.Text {
				return fmt.Sprintf("line %d: %s changed: %s", d.Line, describe(ns), d.Text)
			}
		}
		if len(os.Directives) > len(ns.Directives) {
			return fmt.Sprintf("%s changed: %s removed", describe(ns), os.Directives[len(ns.Directives)].Text)
		}
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
	old := make(map[string]Server, len(os.Servers))
	for _, s := range os.Servers {
		old[s.Name] = s
	}
	var adds, changes, dels []Op
	for _, s := range ns.Servers {
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
	for _, s := range os.Servers {
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
