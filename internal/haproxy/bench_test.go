package haproxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// routes is a haproxy.cfg of n backends of one server each, as
// examples/haproxy renders n routes, with backend i's server on port
// ports(i).
func routes(n int, port func(i int) int) string {
	var b strings.Builder
	b.WriteString(strings.Replace(liveCfg, "SERVERS\n", "", 1))
	for i := range n {
		fmt.Fprintf(&b, "backend r%d\n  balance roundrobin\n  server pod-%d 127.0.0.1:%d\n", i, i, port(i))
	}
	return b.String()
}

// BenchmarkDiff3000: DiffConfigs of the parsed file HAProxy runs and a
// new file of 3,000 backends that differs in one server's port, the new
// file parsed in each iteration, as the template sink does it.
func BenchmarkDiff3000(b *testing.B) {
	old := []byte(routes(3000, func(int) int { return 1000 }))
	new := []byte(routes(3000, func(i int) int { return 1000 + min(i/2999, 1) }))
	b.SetBytes(int64(len(old)))
	running := Parse(old)
	for b.Loop() {
		if u := DiffConfigs(running, Parse(new)); len(u.Ops) != 1 {
			b.Fatal(u.Describe())
		}
	}
}

// BenchmarkRuntimeUpdate3000: a real HAProxy with 3,000 backends; each
// iteration moves one server to another port as the template sink does
// it: Diff, Check, Apply, Verify.
func BenchmarkRuntimeUpdate3000(b *testing.B) {
	cfgs := [2]string{routes(3000, func(int) int { return 1000 }), routes(3000, func(i int) int { return 1000 + min(i/2999, 1) })}
	r := startHAProxy(b, cfgs[0])
	c := Client{Socket: r.sock}
	ctx := context.Background()
	var files [2][]byte
	for i, s := range cfgs {
		files[i] = []byte(strings.NewReplacer("SOCK", r.sock, "LISTEN", r.listen).Replace(s))
	}
	running := Parse(files[0])
	i := 0
	for b.Loop() {
		next := Parse(files[(i+1)%2])
		u := DiffConfigs(running, next)
		left, err := c.Check(ctx, running, u.Ops)
		if err != nil {
			b.Fatal(err)
		}
		ops := append(left, u.Ops...)
		if err := c.Apply(ctx, ops); err != nil {
			b.Fatal(err)
		}
		if err := c.Verify(ctx, next, ops); err != nil {
			b.Fatal(err)
		}
		running = next
		i++
	}
}
