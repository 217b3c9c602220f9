package natskv

import (
	"fmt"
	"net"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/natsconn"
)

// Describe implements node.Describer: the bucket and key prefix. A bucket
// Open did not find is one run would create (create_bucket) or fail on.
func (t *Target) Describe() node.TargetInfo {
	loc := "bucket " + t.s.bucket
	if t.s.prefix != "" {
		loc += fmt.Sprintf(" (prefix %s)", t.s.prefix)
	}
	if t.offline {
		loc += fmt.Sprintf(" on the embedded server %s, not running: read as empty", t.s.conn.Embedded.Listen)
	}
	return node.TargetInfo{Location: loc, Kind: "kv_bucket", Exists: t.kv != nil}
}

// planConn is the connection Open dials. Plan starts no server: with an
// embedded block it connects as a client to the embedded server's listen
// address, where a running instance serves the bucket; reachable is false
// when nothing listens there.
func (s *Sink) planConn(mode node.Mode) (cfg natsconn.Config, reachable bool) {
	cfg = s.conn
	if mode != node.ModePlan || cfg.Embedded == nil {
		return cfg, true
	}
	cfg.Embedded = nil
	cfg.URLs = []string{"nats://" + s.conn.Embedded.Listen}
	timeout := 2 * time.Second
	if t := s.conn.ConnectTimeout; t > 0 && t < timeout {
		timeout = t
	}
	c, err := net.DialTimeout("tcp", s.conn.Embedded.Listen, timeout)
	if err != nil {
		return cfg, false
	}
	c.Close()
	return cfg, true
}

// Show implements node.Describer: the JSON the bucket holds.
func (t *Target) Show(e node.Entry) string { return string(e.Data) }

var _ node.Describer = (*Target)(nil)
