package haproxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Config is what Diff reads of a haproxy.cfg: its sections in order.
// Parse finds only where each section starts; a section's lines are read
// when first asked for, so that a Diff of two large files reads only the
// sections that differ. A Config is used by one goroutine at a time.
type Config struct {
	Sections []*Section
	// opaque says why Diff cannot tell what the file means (a quoted or
	// escaped keyword, a conditional block), or is "".
	opaque string
	byName map[string]*Section // proxies by name, built when first asked for
}

// A Section is one section of the file: the lines from a section keyword
// (global, defaults, frontend, backend, listen, …) to the next.
type Section struct {
	Kind string // "backend"; "" for lines before the first section
	Name string
	Line int // of the section keyword, from 1
	// Header is the section line itself, normalized ("backend be from d").
	Header string
	// body is the section's lines after its keyword line, as written,
	// the first of them line bodyLine.
	body     string
	bodyLine int
	// read is set once body was read into directives and servers, err
	// being the first line refused.
	read       bool
	err        error
	directives []Directive
	servers    []Server
	// defaults is the defaults section this proxy takes its defaults from.
	defaults *Section
	// opaque is set when the section line holds quotes, escapes or
	// variables: its server lines are kept as directives.
	opaque bool
}

// A Directive is one line of a section other than a server, trimmed but
// as written (normalized says what it means).
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

// Parse finds the sections of a haproxy.cfg. It never fails and never
// panics: what HAProxy would refuse among what this package reads (a
// server line without an address, two servers of one name in a backend)
// is the error of the section's Servers.
func Parse(b []byte) *Config {
	c := &Config{}
	text := string(b)
	cur := &Section{bodyLine: 1}
	var lastDefaults *Section
	named := map[string]*Section{}
	start := 0
	for n, off := 1, 0; off < len(text); n++ {
		raw, next := text[off:], len(text)
		if i := strings.IndexByte(raw, '\n'); i >= 0 {
			raw, next = raw[:i], off+i+1
		}
		if line := strings.TrimSpace(raw); line != "" && line[0] != '#' {
			first := firstWord(line)
			if c.opaque == "" && (special(first) || first[0] == '.') {
				c.opaque = fmt.Sprintf("line %d: %s is read by HAProxy in ways this reader does not follow", n, first)
			}
			if sectionKinds[first] {
				cur.body = text[start:off]
				c.Sections = append(c.Sections, cur)
				cur = newSection(line, n, lastDefaults, named)
				if cur.Kind == "defaults" {
					lastDefaults = cur
				}
				start = next
			}
		}
		off = next
	}
	cur.body = text[start:]
	c.Sections = append(c.Sections, cur)
	return c
}

// proxy returns the backend or listen section named name, or nil.
func (c *Config) proxy(name string) *Section {
	if c.byName == nil {
		c.byName = map[string]*Section{}
		for _, s := range c.Sections {
			if hasServers(s.Kind) {
				c.byName[s.Name] = s
			}
		}
	}
	return c.byName[name]
}

// parse reads the section's body once.
func (s *Section) parse() error {
	if s.read {
		return s.err
	}
	s.read = true
	rest := s.body
	for n := s.bodyLine; rest != ""; n++ {
		raw, after, _ := strings.Cut(rest, "\n")
		rest = after
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		if firstWord(line) == "server" && hasServers(s.Kind) && !s.opaque {
			if err := s.addServer(line, n); err != nil && s.err == nil {
				s.err = err
			}
			continue
		}
		s.directives = append(s.directives, Directive{Text: line, Line: n})
	}
	return s.err
}

// Directives returns the section's lines other than its servers.
func (s *Section) Directives() []Directive {
	_ = s.parse()
	return s.directives
}

// Servers returns the section's servers, or the first server line
// HAProxy would refuse.
func (s *Section) Servers() ([]Server, error) {
	err := s.parse()
	return s.servers, err
}

// special says whether s holds a character HAProxy does not read
// literally: a quote, a backslash or a $ (a byte loop: this runs on every
// line of a file of thousands of sections).
func special(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'', '\\', '$':
			return true
		}
	}
	return false
}

// firstWord returns line's first word; line is trimmed and not empty.
func firstWord(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == ' ' || line[i] == '\t' {
			return line[:i]
		}
	}
	return line
}

// newSection starts the section whose keyword line is line.
func newSection(line string, n int, lastDefaults *Section, named map[string]*Section) *Section {
	var fields []string
	opaque := false
	header := line
	if plain(line) {
		// The common case, without allocating: "backend name".
		kind, rest, _ := strings.Cut(line, " ")
		name, rest, _ := strings.Cut(rest, " ")
		fields = []string{kind, name}
		if rest != "" {
			fields = append(fields, strings.Split(rest, " ")...)
		} else if name == "" {
			fields = fields[:1]
		}
	} else {
		fields, opaque = tokens(line)
		header = strings.Join(fields, " ")
	}
	s := &Section{Kind: fields[0], Line: n, Header: header, opaque: opaque, bodyLine: n + 1}
	if len(fields) > 1 {
		s.Name = fields[1]
	}
	switch {
	case s.Kind == "defaults":
		if s.Name != "" {
			named[s.Name] = s
		}
	case len(fields) > 3 && fields[2] == "from":
		s.defaults = named[fields[3]]
	default:
		s.defaults = lastDefaults
	}
	return s
}

// plain says whether a trimmed line is already normalized: words split by
// one space, no comment, nothing quoted, escaped or substituted.
func plain(line string) bool {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\t', '#', '"', '\'', '\\', '$', '\r', '\v', '\f':
			return false
		case ' ':
			if line[i+1] == ' ' { // trimmed: a space is never last
				return false
			}
		}
	}
	return true
}

// addServer adds the server of line to s.
func (s *Section) addServer(line string, n int) error {
	fields, opaque := tokens(line)
	if len(fields) < 3 {
		return fmt.Errorf("line %d: server needs a name and an address", n)
	}
	for _, o := range s.servers {
		if o.Name == fields[1] {
			return fmt.Errorf("line %d: %s %q has two servers named %q (the first at line %d)", n, s.Kind, s.Name, o.Name, o.Line)
		}
	}
	s.servers = append(s.servers, Server{Name: fields[1], Addr: fields[2], Options: fields[3:], Line: n, Opaque: opaque, Text: strings.Join(fields, " ")})
	return nil
}

// normalized is a directive's text with its comment cut and its words
// joined by one space.
func normalized(text string) string {
	f, _ := tokens(text)
	return strings.Join(f, " ")
}

// tokens splits a line into its words with the comment cut. A line with
// quotes, escapes or variables is not split as HAProxy would: opaque is
// set, and the words are only good for comparing lines.
func tokens(line string) (fields []string, opaque bool) {
	opaque = special(line)
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
		ds := sec.Directives()
		for i := len(ds) - 1; i >= 0; i-- {
			if f, _ := tokens(ds[i].Text); len(f) > 0 && f[0] == key {
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
		for _, d := range sec.Directives() {
			if strings.HasPrefix(d.Text, "default-server") {
				if f, _ := tokens(d.Text); f[0] == "default-server" {
					opts = append(opts, f[1:]...)
				}
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
