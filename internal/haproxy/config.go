package haproxy

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Config is what Diff reads of a haproxy.cfg: its sections in order, each
// with its directives and, for proxies that have servers (backend,
// listen), its server lines apart.
type Config struct {
	Sections []*Section
	// opaque says why Diff cannot tell what the file means (a quoted or
	// escaped keyword, a conditional block), or is "".
	opaque string
}

// A Section is one section of the file: the lines from a section keyword
// (global, defaults, frontend, backend, listen, …) to the next.
type Section struct {
	Kind string // "backend"; "" for lines before the first section
	Name string
	Line int // of the section keyword, from 1
	// Header is the section line itself, normalized ("backend be from d").
	Header string
	// Directives are the section's lines other than its servers, each
	// normalized: comments cut and tokens joined by one space.
	Directives []Directive
	Servers    []Server
	// defaults is the defaults section this proxy takes its defaults from.
	defaults *Section
	// opaque is set when the section line holds quotes, escapes or
	// variables: its server lines are kept as directives.
	opaque bool
}

// A Directive is one normalized line of a section.
type Directive struct {
	Text string
	Line int
}

// A Server is one `server NAME ADDRESS [options]` line of a backend or
// listen section.
type Server struct {
	Name    string
	Addr    string   // as written: "10.0.0.1:8080"
	Options []string // the tokens after the address
	Line    int
	// Opaque is set when the line holds quotes, escapes or variables: its
	// tokens are not literal, so Diff only tells whether it changed.
	Opaque bool
	Text   string // the normalized line
}

// sectionKinds are the keywords that start a section.
var sectionKinds = map[string]bool{
	"global": true, "defaults": true, "frontend": true, "backend": true, "listen": true,
	"peers": true, "resolvers": true, "userlist": true, "mailers": true, "program": true,
	"http-errors": true, "ring": true, "cache": true, "log-forward": true, "fcgi-app": true,
}

// hasServers says which sections' server lines are proxy servers.
func hasServers(kind string) bool { return kind == "backend" || kind == "listen" }

// Parse reads the sections and server lines of a haproxy.cfg. It refuses
// what HAProxy would refuse among what it reads (a server line without an
// address, two servers of one name in a backend) and never panics.
func Parse(b []byte) (*Config, error) {
	c := &Config{}
	cur := &Section{}
	var lastDefaults *Section
	named := map[string]*Section{}
	for n, raw := range bytes.Split(b, []byte("\n")) {
		line := n + 1
		fields, opaque := tokens(string(raw))
		if len(fields) == 0 {
			continue
		}
		text := strings.Join(fields, " ")
		if c.opaque == "" && (strings.ContainsAny(fields[0], "\"'\\$") || strings.HasPrefix(fields[0], ".")) {
			c.opaque = fmt.Sprintf("line %d: %s is read by HAProxy in ways this reader does not follow", line, fields[0])
		}
		if sectionKinds[fields[0]] {
			c.Sections = append(c.Sections, cur)
			cur = &Section{Kind: fields[0], Line: line, Header: text, opaque: opaque}
			if len(fields) > 1 {
				cur.Name = fields[1]
			}
			switch {
			case cur.Kind == "defaults":
				lastDefaults = cur
				if cur.Name != "" {
					named[cur.Name] = cur
				}
			case len(fields) > 3 && fields[2] == "from":
				cur.defaults = named[fields[3]]
			default:
				cur.defaults = lastDefaults
			}
			continue
		}
		if fields[0] != "server" || !hasServers(cur.Kind) || cur.opaque {
			cur.Directives = append(cur.Directives, Directive{Text: text, Line: line})
			continue
		}
		if len(fields) < 3 {
			return nil, fmt.Errorf("line %d: server needs a name and an address", line)
		}
		for _, s := range cur.Servers {
			if s.Name == fields[1] {
				return nil, fmt.Errorf("line %d: %s %q has two servers named %q (the first at line %d)", line, cur.Kind, cur.Name, s.Name, s.Line)
			}
		}
		cur.Servers = append(cur.Servers, Server{Name: fields[1], Addr: fields[2], Options: fields[3:], Line: line, Opaque: opaque, Text: text})
	}
	c.Sections = append(c.Sections, cur)
	return c, nil
}

// tokens splits a line into its words with the comment cut. A line with
// quotes, escapes or variables is not split as HAProxy would: opaque is
// set, and the words are only good for comparing lines.
func tokens(line string) (fields []string, opaque bool) {
	opaque = strings.ContainsAny(line, "\"'\\$")
	if !opaque {
		line, _, _ = strings.Cut(line, "#")
	}
	return strings.Fields(line), opaque
}

// setting returns the words after the last directive named key in s, or
// in its defaults when s has none.
func (s *Section) setting(key string) []string {
	for _, sec := range []*Section{s, s.defaults} {
		if sec == nil {
			continue
		}
		for i := len(sec.Directives) - 1; i >= 0; i-- {
			if f := strings.Fields(sec.Directives[i].Text); f[0] == key {
				return f[1:]
			}
		}
	}
	return nil
}

// dynamic says why servers cannot be added to s or have their weight set
// at run time, or "" when they can: HAProxy allows it only with a dynamic
// load-balancing algorithm.
func (s *Section) dynamic() string {
	algo := "roundrobin"
	if f := s.setting("balance"); len(f) > 0 {
		algo, _, _ = strings.Cut(f[0], "(")
	}
	switch algo {
	case "roundrobin", "leastconn", "first", "random":
		return ""
	case "source", "uri", "url_param", "hdr", "rdp-cookie", "hash":
		if f := s.setting("hash-type"); len(f) > 0 && f[0] == "consistent" {
			return ""
		}
	}
	return fmt.Sprintf("balance %s is a static algorithm", algo)
}

// merged returns srv with the options of the default-server lines in
// effect before its own (those of the defaults section, then the
// section's), as HAProxy applies them to a server of the file; HAProxy
// 2.6 does not apply them to a server added at run time, so Diff passes
// them to `add server` itself.
func (s *Section) merged(srv Server) Server {
	var opts []string
	for _, sec := range []*Section{s.defaults, s} {
		if sec == nil {
			continue
		}
		for _, d := range sec.Directives {
			if f := strings.Fields(d.Text); f[0] == "default-server" {
				opts = append(opts, f[1:]...)
			}
		}
	}
	if opts == nil {
		return srv
	}
	srv.Options = append(opts, srv.Options...)
	return srv
}

// addrPort returns the server's address when it is an IP literal with a
// port, as `set server … addr` and `add server` take.
func (s Server) addrPort() (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(s.Addr)
	if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
		return netip.AddrPort{}, false
	}
	return ap, true
}

// weight returns the server's weight: its `weight N`, or 1. ok is false
// when the weight word is not followed by a weight HAProxy accepts.
func (s Server) weight() (w int, ok bool) {
	w = 1
	for i := 0; i < len(s.Options); i++ {
		if s.Options[i] != "weight" {
			continue
		}
		if i+1 >= len(s.Options) {
			return 0, false
		}
		n, err := strconv.Atoi(s.Options[i+1])
		if err != nil || n < 0 || n > 256 {
			return 0, false
		}
		w, i = n, i+1
	}
	return w, true
}

// disabled says whether the server starts in maintenance.
func (s Server) disabled() bool {
	d := false
	for _, o := range s.Options {
		switch o {
		case "disabled":
			d = true
		case "enabled":
			d = false
		}
	}
	return d
}

// rest returns the options other than weight and state, which the
// runtime API cannot change.
func (s Server) rest() string {
	var out []string
	for i := 0; i < len(s.Options); i++ {
		switch s.Options[i] {
		case "weight":
			i++
		case "disabled", "enabled":
		default:
			out = append(out, s.Options[i])
		}
	}
	return strings.Join(out, " ")
}
