package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
)

// AppliedEntry is one write a sandboxed sink applied.
type AppliedEntry struct {
	Delete bool
	Entry  node.Entry
}

// memTarget is a sink's target in a config test: it holds entries in
// memory and encodes them with the sink's own Prepare.
type memTarget struct {
	prep   node.Preparer
	mu     sync.Mutex
	state  map[node.Key]node.Entry
	writes []AppliedEntry
}

// opener returns the sink loop's open function for n.
func (m *memTarget) opener(n *graph.Node) func(context.Context, node.Env) (node.Target, error) {
	return func(_ context.Context, env node.Env) (node.Target, error) {
		if enc, ok := n.Sink.(node.Encoder); ok {
			p, err := enc.Encoder(env)
			if err != nil {
				return nil, fmt.Errorf("%s: encoder: %w", n.Address, err)
			}
			m.prep = p
		}
		return m, nil
	}
}

func (m *memTarget) Prepare(r node.Record) (node.Entry, error) {
	if m.prep == nil {
		return node.Entry{Key: r.Key, Value: r.Value}, nil
	}
	return m.prep.Prepare(r)
}

func (m *memTarget) Actual(context.Context) ([]node.Entry, error) { return m.entries(), nil }

func (m *memTarget) Update(_ context.Context, batch []node.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range batch {
		m.state[e.Key] = e
		m.writes = append(m.writes, AppliedEntry{Entry: e})
	}
}

func (m *memTarget) Delete(_ context.Context, batch []node.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range batch {
		delete(m.state, e.Key)
		m.writes = append(m.writes, AppliedEntry{Delete: true, Entry: e})
	}
}

func (m *memTarget) Close() error { return nil }

func (m *memTarget) entries() []node.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.SortedFunc(maps.Values(m.state), func(a, b node.Entry) int { return cmp.Compare(a.Key, b.Key) })
}

func (m *memTarget) takeWrites() []AppliedEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.writes
	m.writes = nil
	return w
}

var _ node.Target = (*memTarget)(nil)
