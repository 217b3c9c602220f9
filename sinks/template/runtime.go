package template

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/atomicfile"
	"github.com/pipeline/pipeline/internal/haproxy"
	"github.com/pipeline/pipeline/schema"
)

// Attributes of the runtime block.
var (
	runtimeSocketAttr = schema.String("socket").Required().
				Doc("Path of HAProxy's runtime API socket, declared in haproxy.cfg at level admin (`stats socket /run/haproxy/admin.sock level admin`). Relative to the configuration's directory.").
				Example(`"/run/haproxy/admin.sock"`)
	runtimeTimeoutAttr = schema.Duration("timeout").Default(2*time.Second, `"2s"`).
				Doc("How long each command on the socket may take. A command that takes longer ends the runtime update, and the change is checked, swapped and reloaded instead.")
	runtimeBlock = schema.Nested("runtime", schema.Block{Attrs: []schema.Attribute{runtimeSocketAttr, runtimeTimeoutAttr}}).
			WithLabels("program").
			WithDoc("Changes the program can take at run time are sent over its runtime API instead of a reload, and the file is then written with no check and no reload. The only program is \"haproxy\": a server's address, port, weight or state, and a server added to or removed from an existing backend. Anything else (a new backend, a frontend rule, a global setting), and any error, mismatch or timeout on the socket, is checked, swapped and reloaded as without the block. See docs/template.md.")
)

// decodeRuntime reads the optional runtime block; nil when absent.
func decodeRuntime(c *schema.Content, abs func(string) string) (*haproxy.Client, hcl.Diagnostics) {
	blocks := runtimeBlock.Get(c)
	if len(blocks) == 0 {
		return nil, nil
	}
	b := blocks[0]
	var diags hcl.Diagnostics
	if len(b.Labels) > 0 && b.Labels[0] != "haproxy" {
		diags = append(diags, errAt(b.LabelRanges[0], "Unknown runtime program",
			fmt.Sprintf("%q has no runtime API this sink knows. Write runtime \"haproxy\" { socket = \"/run/haproxy/admin.sock\" }.", b.Labels[0])))
	}
	sock := runtimeSocketAttr.Read(b, &diags)
	timeout, rng, d := runtimeTimeoutAttr.Get(b)
	diags = append(diags, d...)
	if timeout <= 0 && !d.HasErrors() {
		diags = append(diags, errAt(rng, "Invalid timeout", "timeout must be greater than zero, such as \"2s\"."))
	}
	return &haproxy.Client{Socket: abs(sock), Timeout: timeout}, diags
}

// A via is the way a change of the file reached its reader.
type via struct {
	runtime bool      // by the runtime API, with no check and no reload
	detail  string    // the ops, or why it took a reload
	at      time.Time // when
}

func (p via) String() string {
	how := "check, swap and reload"
	if p.runtime {
		how = "runtime update, no reload"
	}
	return fmt.Sprintf("%s at %s: %s", how, p.at.UTC().Format(time.RFC3339), p.detail)
}

// runtimeUpdate makes the change from the file on disk to rend over
// HAProxy's runtime API and then writes the file with no check and no
// reload. It does so only when HAProxy runs the file on disk: the file is
// the last one written, no reload is under way or due, the last reload is
// at least reload_interval and runtimeSettle old (it waits until then),
// and HAProxy holds in the backends the change touches what the file
// says. It returns false, with why, when the change is to be checked,
// swapped and reloaded instead; true with the write's error otherwise.
func (t *Target) runtimeUpdate(ctx context.Context, rend *rendering, digest string, cur *onDisk) (bool, string, error) {
	if t.disk == nil {
		return false, "the file on disk is not the last one written", nil
	}
	t.mu.Lock()
	busy := t.reloading || t.reload.pending
	wait := time.Duration(0)
	if !t.lastReload.IsZero() {
		wait = t.lastReload.Add(max(t.s.reloadGap, runtimeSettle)).Sub(t.env.Now())
	}
	t.mu.Unlock()
	if busy {
		return false, "a reload is under way or due", nil
	}
	if wait > 0 {
		// A worker a reload started may not answer on the socket yet, and
		// the one it replaces may still: wait until the reload settled, as
		// a reload would wait for reload_interval.
		if err := t.sleep(ctx, wait); err != nil {
			return true, "", err
		}
	}
	running := t.runningConfig()
	next := haproxy.Parse(rend.data)
	u := haproxy.DiffConfigs(running, next)
	if u.Reload != "" {
		return false, u.Reload, nil
	}
	c := t.s.runtime
	ops := u.Ops
	left, err := c.Check(ctx, running, u.Ops)
	if err == nil {
		ops = append(left, u.Ops...)
		err = c.Apply(ctx, ops)
	}
	if err == nil {
		err = c.Verify(ctx, next, ops)
	}
	if err != nil {
		if ctx.Err() != nil {
			return true, "", fmt.Errorf("stopped during a runtime update: %w", ctx.Err())
		}
		t.met.runtime.WithLabelValues("fallback").Inc()
		t.env.Logger.Warn("runtime update failed; checking, swapping and reloading", "file", t.s.path, "op", "runtime", "err", err)
		return false, "the runtime update failed: " + err.Error(), nil
	}
	t.met.runtime.WithLabelValues("ok").Inc()
	return true, "", t.writeRuntime(rend, digest, cur, ops, next)
}

// writeRuntime writes rend (digest), which HAProxy took at run time by
// ops, with no check and no reload, and records it for explain, the audit
// and tap.
func (t *Target) writeRuntime(rend *rendering, digest string, cur *onDisk, ops []haproxy.Op, next *haproxy.Config) error {
	t.mu.Lock()
	desc := t.redactor().String(describeOps(haproxy.Update{Ops: ops}))
	t.mu.Unlock()
	if t.s.backup && cur != nil && cur.existed {
		if err := backup(t.s.path, *cur); err != nil {
			return t.problem("write", err, "cannot back the file up; will retry")
		}
	}
	tmp, err := atomicfile.Create(t.s.path, rend.data, atomicfile.Options{Mode: t.s.mode, UID: t.own.uid, GID: t.own.gid})
	if err == nil {
		t.saveState(digest) // before the swap, as swap does
		err = tmp.Commit()
	}
	if err != nil {
		return t.problem("write", err, "HAProxy took the change at run time, but the file cannot be written; will retry")
	}
	t.note(via{runtime: true, detail: desc, at: t.env.Now()})
	t.settled(rend, digest)
	t.running, t.runningDigest = next, digest
	t.met.renders.WithLabelValues("written").Inc()
	t.env.Logger.Info("file written after a runtime update", "file", t.s.path, "bytes", len(rend.data), "digest", digest[:12], "count", len(ops))
	detail := fmt.Sprintf("rendered %s (%d bytes): runtime update, no check, no reload: %s", t.s.path, len(rend.data), desc)
	t.env.Decide(node.Decision{Kind: node.DecisionFileRendered, Node: t.s.address, Detail: detail, Attrs: map[string]string{
		"file": t.s.path, "sha256": digest, "bytes": strconv.Itoa(len(rend.data)), "check": "none", "reload": "none",
		"restored": "false", "via": "runtime", "ops": desc}})
	t.tapped = append(t.tapped, node.Entry{Key: node.Key(t.s.path), Value: cty.ObjectVal(map[string]cty.Value{"sha256": cty.StringVal(digest),
		"bytes": cty.NumberIntVal(int64(len(rend.data))), "records": cty.NumberIntVal(int64(len(t.entries))),
		"check": cty.StringVal("none"), "reload": cty.StringVal("none"), "runtime": cty.StringVal(desc)})})
	return nil
}

// runtimeSettle is the least time from a reload to a runtime update:
// while HAProxy's new worker starts, the old one may still answer on the
// socket, and a change it took would be lost with it.
const runtimeSettle = time.Second

// sleep waits d on the node's clock, or until ctx ends.
func (t *Target) sleep(ctx context.Context, d time.Duration) error {
	clock := t.env.Clock
	if clock == nil {
		clock = node.WallClock{}
	}
	timer := clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("stopped while waiting for a reload to settle: %w", ctx.Err())
	case <-timer.C():
		return nil
	}
}

// note records p as the path of every key changed since the file last
// held the render of entries.
func (t *Target) note(p via) {
	if t.paths == nil {
		t.paths = map[node.Key]via{}
	}
	for k := range t.unsettled {
		if _, ok := t.entries[k]; ok {
			t.paths[k] = p
		} else {
			delete(t.paths, k)
		}
	}
}

// describeOps is an update's ops in one line.
func describeOps(u haproxy.Update) string {
	if len(u.Ops) == 0 {
		return "no server changed"
	}
	return strings.TrimPrefix(u.Describe(), "runtime: ")
}

// change makes the file hold rend (digest): by a runtime update when
// the runtime block is set and the change allows it, else by check, swap
// and reload, t.why saying why not a runtime update.
func (t *Target) change(ctx context.Context, rend *rendering, digest string, cur *onDisk) error {
	t.why = ""
	if t.s.runtime == nil {
		return t.swap(ctx, rend, digest, cur)
	}
	done, why, err := t.runtimeUpdate(ctx, rend, digest, cur)
	if done {
		return err
	}
	t.mu.Lock()
	t.why = t.redactor().String(why) // it may quote a line of the file
	t.mu.Unlock()
	return t.swap(ctx, rend, digest, cur)
}

// runningConfig is the file on disk parsed, kept from one runtime update
// to the next.
func (t *Target) runningConfig() *haproxy.Config {
	if t.running == nil || t.runningDigest != t.disk.digest {
		t.running, t.runningDigest = haproxy.Parse(t.disk.data), t.disk.digest
	}
	return t.running
}
