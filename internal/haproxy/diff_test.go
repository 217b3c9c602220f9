package haproxy

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const base = `global
  stats socket /run/haproxy.sock level admin
  hard-stop-after 30s

defaults
  mode http
  timeout connect 1s

frontend fe
  bind :80
  use_backend be if { path_beg /a } # the shop
  default_backend be

backend be
  balance roundrobin
  server a 10.0.0.1:80
  server b 10.0.0.2:80 weight 5

backend st
  balance source
  server x 10.0.1.1:80

listen stats
  bind :8404
  server y 10.0.2.1:80
`

// edit replaces old by new in base, once, and fails the test when base
// does not hold old.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	s := base
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("base has no %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

var equateAddr = cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestDiffRuntime(t *testing.T) {
	tests := []struct {
		name string
		new  []string // replacements in base
		want []Op
	}{
		{"identical", nil, nil},
		{"comments and spacing only", []string{"  server a 10.0.0.1:80", "\tserver  a   10.0.0.1:80  # first", "# the shop", "# the mall"}, nil},
		{"servers reordered", []string{"  server a 10.0.0.1:80\n  server b 10.0.0.2:80 weight 5", "  server b 10.0.0.2:80 weight 5\n  server a 10.0.0.1:80"}, nil},
		{"port", []string{"10.0.0.1:80", "10.0.0.1:81"}, []Op{{Action: SetAddr, Backend: "be", Server: "a", Addr: ap("10.0.0.1:81")}}},
		{"address", []string{"10.0.0.1:80", "10.0.0.9:80"}, []Op{{Action: SetAddr, Backend: "be", Server: "a", Addr: ap("10.0.0.9:80")}}},
		{"address in a static backend", []string{"10.0.1.1:80", "10.0.1.2:80"}, []Op{{Action: SetAddr, Backend: "st", Server: "x", Addr: ap("10.0.1.2:80")}}},
		{"address in a listen section", []string{"10.0.2.1:80", "10.0.2.1:90"}, []Op{{Action: SetAddr, Backend: "stats", Server: "y", Addr: ap("10.0.2.1:90")}}},
		{"weight", []string{"weight 5", "weight 7"}, []Op{{Action: SetWeight, Backend: "be", Server: "b", Weight: 7}}},
		{"weight dropped is 1", []string{" weight 5", ""}, []Op{{Action: SetWeight, Backend: "be", Server: "b", Weight: 1}}},
		{"weight 0 drains", []string{"10.0.0.1:80", "10.0.0.1:80 weight 0"}, []Op{{Action: SetWeight, Backend: "be", Server: "a", Weight: 0}}},
		{"disabled", []string{"10.0.0.1:80", "10.0.0.1:80 disabled"}, []Op{{Action: SetState, Backend: "be", Server: "a", Disabled: true}}},
		{"address, weight and state at once", []string{"10.0.0.2:80 weight 5", "10.0.0.3:8080 weight 2 disabled"}, []Op{
			{Action: SetAddr, Backend: "be", Server: "b", Addr: ap("10.0.0.3:8080")},
			{Action: SetWeight, Backend: "be", Server: "b", Weight: 2},
			{Action: SetState, Backend: "be", Server: "b", Disabled: true}}},
		{"added", []string{"weight 5\n", "weight 5\n  server c 10.0.0.3:80\n"}, []Op{{Action: AddServer, Backend: "be", Server: "c", Addr: ap("10.0.0.3:80"), Weight: 1}}},
		{"added with options", []string{"weight 5\n", "weight 5\n  server c 10.0.0.3:80 check inter 2s weight 3 maxconn 100 disabled\n"}, []Op{
			{Action: AddServer, Backend: "be", Server: "c", Addr: ap("10.0.0.3:80"), Weight: 3, Disabled: true, Options: []string{"check", "inter", "2s", "weight", "3", "maxconn", "100"}}}},
		{"added IPv6", []string{"weight 5\n", "weight 5\n  server c [fd00::1]:80\n"}, []Op{{Action: AddServer, Backend: "be", Server: "c", Addr: ap("[fd00::1]:80"), Weight: 1}}},
		{"removed", []string{"  server a 10.0.0.1:80\n", ""}, []Op{{Action: DelServer, Backend: "be", Server: "a"}}},
		{"rollout: additions first, removals last", []string{"  server a 10.0.0.1:80\n  server b 10.0.0.2:80 weight 5", "  server c 10.0.0.3:80\n  server b 10.0.0.4:80 weight 5"}, []Op{
			{Action: AddServer, Backend: "be", Server: "c", Addr: ap("10.0.0.3:80"), Weight: 1},
			{Action: SetAddr, Backend: "be", Server: "b", Addr: ap("10.0.0.4:80")},
			{Action: DelServer, Backend: "be", Server: "a"}}},
		{"removed from a static backend", []string{"  server x 10.0.1.1:80\n", ""}, []Op{{Action: DelServer, Backend: "st", Server: "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := Diff([]byte(base), []byte(edit(t, tt.new...)))
			if u.Reload != "" {
				t.Fatalf("Diff wants a reload: %s", u.Reload)
			}
			if diff := cmp.Diff(tt.want, u.Ops, equateAddr); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiffReload(t *testing.T) {
	hashed := edit(t, "balance source\n", "balance source\n  hash-type consistent\n")
	tests := []struct {
		name string
		old  string // base when ""
		new  string
		why  string // a part of the reason
	}{
		{"new backend", "", base + "backend more\n  server m 10.0.0.9:80\n", "line 26: backend more added"},
		{"backend removed", "", edit(t, "backend st\n  balance source\n  server x 10.0.1.1:80\n", ""), "backend st removed"},
		{"sections moved", "", strings.Replace(base, "listen stats", "listen stats2", 1), "listen stats2 added"},
		{"frontend rule", "", edit(t, "path_beg /a", "path_beg /b"), "line 11: frontend fe changed: use_backend be if { path_beg /b }"},
		{"global", "", edit(t, "hard-stop-after 30s", "hard-stop-after 10s"), "section global changed"},
		{"directive removed", "", edit(t, "  balance roundrobin\n", ""), "backend be changed"},
		{"option added to a server", "", edit(t, "10.0.0.1:80", "10.0.0.1:80 check"), `options the runtime API cannot set changed ("" -> "check")`},
		{"hostname address", "", edit(t, "10.0.0.1:80", "web.example:80"), "the runtime API sets only an IP address with a port"},
		{"no port", "", edit(t, "10.0.0.1:80", "10.0.0.1"), "the runtime API sets only an IP address with a port"},
		{"port range", "", edit(t, "10.0.0.1:80", "10.0.0.1:80-90"), "the runtime API sets only"},
		{"weight in a static backend", "", edit(t, "10.0.1.1:80", "10.0.1.1:80 weight 3"), "balance source is a static algorithm"},
		{"added to a static backend", "", edit(t, "  server x 10.0.1.1:80\n", "  server x 10.0.1.1:80\n  server z 10.0.1.2:80\n"), "added: balance source is a static algorithm"},
		{"added to static-rr from defaults", edit(t, "timeout connect 1s", "timeout connect 1s\n  balance static-rr", "  balance roundrobin\n", ""),
			edit(t, "timeout connect 1s", "timeout connect 1s\n  balance static-rr", "  balance roundrobin\n", "", "weight 5\n", "weight 5\n  server c 10.0.0.3:80\n"), "balance static-rr is a static algorithm"},
		{"added with a default-server option not added at run time", edit(t, "timeout connect 1s", "timeout connect 1s\n  default-server ssl"),
			edit(t, "timeout connect 1s", "timeout connect 1s\n  default-server ssl", "weight 5\n", "weight 5\n  server c 10.0.0.3:80\n"), "added with option ssl"},
		{"default-server changed", "", edit(t, "timeout connect 1s", "timeout connect 1s\n  default-server weight 3"), "section defaults changed"},
		{"hash without consistent", hashed, strings.Replace(hashed, "hash-type consistent\n", "", 1), "backend st changed"},
		{"added with an option not added at run time", "", edit(t, "weight 5\n", "weight 5\n  server c 10.0.0.3:443 ssl verify none\n"), "option ssl"},
		{"added with a bad argument", "", edit(t, "weight 5\n", "weight 5\n  server c 10.0.0.3:80 inter 2s;shutdown\n"), "option inter has no valid argument"},
		{"added with a hostname", "", edit(t, "weight 5\n", "weight 5\n  server c web:80\n"), "adds only an IP address"},
		{"a name the CLI would split", "", edit(t, "weight 5\n", "weight 5\n  server c;x 10.0.0.3:80\n"), "its name cannot be sent"},
		{"a renamed server's name", "", edit(t, "server a 10.0.0.1:80", "server a;b 10.0.0.1:80"), "its name cannot be sent"},
		{"bad weight", "", edit(t, "weight 5", "weight lots"), "weight is not a number"},
		{"weight out of range", "", edit(t, "weight 5", "weight 300"), "weight is not a number"},
		{"two servers of one name", "", edit(t, "server b 10.0.0.2", "server a 10.0.0.2"), `two servers named "a"`},
		{"server without address", "", edit(t, "server b 10.0.0.2:80 weight 5", "server b"), "needs a name and an address"},
		{"running file unreadable", edit(t, "server b 10.0.0.2:80 weight 5", "server b"), base, "running file: line 17"},
		{"quoted keyword", "", edit(t, "  balance roundrobin", "  \"balance\" roundrobin"), "in ways this reader does not follow"},
		{"conditional block", "", edit(t, "  server a 10.0.0.1:80", ".if defined(X)\n  server a 10.0.0.1:80\n.endif"), ".if is read by HAProxy"},
		{"quoted server changed", edit(t, "server a 10.0.0.1:80", `server a 10.0.0.1:80 cookie "a"`), edit(t, "server a 10.0.0.1:80", `server a 10.0.0.2:80 cookie "a"`), "quotes, escapes or variables changed"},
		{"server added with a variable", "", edit(t, "weight 5\n", "weight 5\n  server c ${ADDR}:80\n"), "added with quotes"},
		{"servers of a quoted backend", edit(t, "backend st", `backend st # "static"`), edit(t, "backend st", `backend st # "static"`, "10.0.1.1:80", "10.0.1.2:80"), `line 21: backend st changed: server x 10.0.1.2:80`},
		{"a peer's server", base + "peers p\n  server h1 10.0.3.1:1024\n", base + "peers p\n  server h1 10.0.3.2:1024\n", "peers p changed"},
		{"garbage", "", "\x00\xff server \n\n server", "section global removed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := tt.old
			if old == "" {
				old = base
			}
			u := Diff([]byte(old), []byte(tt.new))
			if !strings.Contains(u.Reload, tt.why) {
				t.Errorf("Diff = %+v, want a reload because %q", u, tt.why)
			}
			if u.Reload != "" && len(u.Ops) > 0 {
				t.Errorf("a reload with ops: %v", u.Ops)
			}
		})
	}
}

func TestDiffConsistentHashing(t *testing.T) {
	old := edit(t, "balance source\n", "balance source\n  hash-type consistent\n")
	u := Diff([]byte(old), []byte(strings.Replace(old, "10.0.1.1:80\n", "10.0.1.1:80 weight 2\n  server z 10.0.1.2:80\n", 1)))
	want := []Op{{Action: AddServer, Backend: "st", Server: "z", Addr: ap("10.0.1.2:80"), Weight: 1}, {Action: SetWeight, Backend: "st", Server: "x", Weight: 2}}
	if diff := cmp.Diff(Update{Ops: want}, u, equateAddr); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
}

// default-server lines apply to the servers of the file, and HAProxy
// 2.6 does not apply them to a server added at run time: Diff passes
// them to add server, the server's own options winning.
func TestDiffDefaultServer(t *testing.T) {
	old := edit(t, "timeout connect 1s", "timeout connect 1s\n  default-server check inter 3s weight 10", "balance roundrobin\n", "balance roundrobin\n  default-server maxconn 50 inter 2s\n")
	tests := []struct {
		name string
		new  []string
		want []Op
	}{
		{"added", []string{"weight 5\n", "weight 5\n  server c 10.0.0.3:80 maxconn 7\n"}, []Op{{Action: AddServer, Backend: "be", Server: "c", Addr: ap("10.0.0.3:80"), Weight: 10,
			Options: []string{"check", "inter", "2s", "weight", "10", "maxconn", "7"}}}},
		{"the default weight written out", []string{"10.0.0.1:80", "10.0.0.1:80 weight 10"}, nil},
		{"a weight instead of the default", []string{"10.0.0.1:80", "10.0.0.1:80 weight 1"}, []Op{{Action: SetWeight, Backend: "be", Server: "a", Weight: 1}}},
		{"back to the default weight", []string{" weight 5", ""}, []Op{{Action: SetWeight, Backend: "be", Server: "b", Weight: 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := old
			for i := 0; i+1 < len(tt.new); i += 2 {
				n = strings.Replace(n, tt.new[i], tt.new[i+1], 1)
			}
			if diff := cmp.Diff(Update{Ops: tt.want}, Diff([]byte(old), []byte(n)), equateAddr); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpCommands(t *testing.T) {
	tests := []struct {
		op   Op
		want []string
	}{
		{Op{Action: SetAddr, Backend: "be", Server: "a", Addr: ap("10.0.0.1:81")}, []string{"set server be/a addr 10.0.0.1 port 81"}},
		{Op{Action: SetAddr, Backend: "be", Server: "a", Addr: ap("[fd00::1]:81")}, []string{"set server be/a addr fd00::1 port 81"}},
		{Op{Action: SetWeight, Backend: "be", Server: "a", Weight: 0}, []string{"set server be/a weight 0"}},
		{Op{Action: SetState, Backend: "be", Server: "a", Disabled: true}, []string{"set server be/a state maint"}},
		{Op{Action: SetState, Backend: "be", Server: "a"}, []string{"set server be/a state ready"}},
		{Op{Action: AddServer, Backend: "be", Server: "c", Addr: ap("10.0.0.3:80"), Weight: 1}, []string{"add server be/c 10.0.0.3:80", "enable server be/c"}},
		{Op{Action: AddServer, Backend: "be", Server: "c", Addr: ap("10.0.0.3:80"), Disabled: true, Options: []string{"check", "weight", "2"}},
			[]string{"add server be/c 10.0.0.3:80 check weight 2", "enable health be/c"}},
		{Op{Action: DelServer, Backend: "be", Server: "a"}, []string{"set server be/a state maint", "del server be/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			var got []string
			for _, c := range tt.op.commands() {
				got = append(got, c.text)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	u := Diff([]byte(base), []byte(edit(t, "10.0.0.1:80", "10.0.0.1:81", "  server b 10.0.0.2:80 weight 5\n", "")))
	if got, want := u.Describe(), "runtime: be/a addr 10.0.0.1:81, del be/b"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if got := (Update{Reload: "backend x added"}).Describe(); got != "reload: backend x added" {
		t.Errorf("Describe = %q", got)
	}
}

// FuzzDiff: Diff never panics, a file is never a change from itself, and
// every op it returns can be sent as it is.
func FuzzDiff(f *testing.F) {
	f.Add([]byte(base), []byte(strings.Replace(base, "10.0.0.1:80", "10.0.0.1:81", 1)))
	f.Add([]byte(base), []byte(strings.Replace(base, "weight 5\n", "weight 5\n  server c 10.0.0.3:80 check\n", 1)))
	f.Add([]byte(base), []byte("backend be\n server a [::1]:1 weight 256 disabled\n"))
	f.Add([]byte("backend be\n"), []byte("backend be\n  server a 1.2.3.4:5 \"x\"\n"))
	f.Fuzz(func(t *testing.T, old, new []byte) {
		if u := Diff(old, old); u.Reload != "" || len(u.Ops) > 0 {
			t.Fatalf("a file differs from itself: %+v", u)
		}
		u := Diff(old, new)
		if u.Reload != "" && len(u.Ops) > 0 {
			t.Fatalf("a reload with ops: %+v", u)
		}
		for _, o := range u.Ops {
			for _, c := range o.commands() {
				if strings.ContainsAny(c.text, "\n;\r") {
					t.Fatalf("command %q cannot be sent", c.text)
				}
			}
		}
	})
}
