package console

import (
	"fmt"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/redact"
)

// graphView is the JSON of GET /console/graph: the compiled graph as the
// page draws it. It is built once per applied configuration.
type graphView struct {
	// Version rises each time the console is handed a new graph; the
	// page refetches the graph when a frame names a newer one.
	Version uint64     `json:"version"`
	Width   int        `json:"width"`
	Height  int        `json:"height"`
	Nodes   []nodeView `json:"nodes"`
	Edges   []edgeView `json:"edges"`
}

type nodeView struct {
	Address string `json:"address"`
	Kind    string `json:"kind"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Pos     string `json:"pos"` // file:line of the block
	X       int    `json:"x"`
	Y       int    `json:"y"`
	W       int    `json:"w"`
	H       int    `json:"h"`
	// Reads lists the fields a selectively decoding source decodes ("."
	// for whole objects); empty for other nodes.
	Reads []string `json:"reads,omitempty"`
	// Emits is the data type of the node's output; empty for sinks.
	Emits string `json:"emits,omitempty"`
}

type edgeView struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// nodeInfo is what the console keeps of one node of the running graph.
type nodeInfo struct {
	view   nodeView
	inputs []string
	block  string // the block as written, secrets masked
}

// viewGraph lays g out. Block texts are read from the configuration's
// files and masked with secrets.
func viewGraph(g *graph.Graph, secrets *redact.Redactor, version uint64) (graphView, map[string]*nodeInfo) {
	var ln []layoutNode
	for _, n := range g.Nodes {
		l := layoutNode{Address: n.Address, Kind: n.Kind}
		for _, in := range n.Inputs {
			l.Inputs = append(l.Inputs, in.Address)
		}
		ln = append(ln, l)
	}
	boxes, w, h := layout(ln)
	gv := graphView{Version: version, Width: w, Height: h, Nodes: []nodeView{}, Edges: []edgeView{}}
	infos := map[string]*nodeInfo{}
	for i, n := range g.Nodes {
		b := boxes[n.Address]
		v := nodeView{Address: n.Address, Kind: string(n.Kind), Type: n.Type, Name: n.Name, X: b.X, Y: b.Y, W: b.W, H: b.H,
			Emits: string(n.Emits)}
		if n.Block != nil {
			v.Pos = fmt.Sprintf("%s:%d", n.Block.DeclRange.Filename, n.Block.DeclRange.Start.Line)
		}
		if _, ok := n.Source.(node.Projector); ok {
			v.Reads = []string{"."}
			if n.Projection != nil {
				v.Reads = n.Projection.List()
			}
		}
		for j := range v.Reads {
			v.Reads[j] = secrets.String(v.Reads[j])
		}
		gv.Nodes = append(gv.Nodes, v)
		info := &nodeInfo{view: v, inputs: ln[i].Inputs, block: blockText(g.Config, n, secrets)}
		infos[n.Address] = info
		for _, in := range ln[i].Inputs {
			gv.Edges = append(gv.Edges, edgeView{From: in, To: n.Address})
		}
	}
	return gv, infos
}
