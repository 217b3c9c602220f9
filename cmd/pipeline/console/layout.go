package console

import (
	"sort"

	"github.com/pipeline/pipeline/engine/node"
)

// Sizes of the layout, in the page's SVG units.
const (
	nodeW   = 236
	nodeH   = 104
	colGap  = 72
	rowGap  = 28
	marginX = 24
	marginY = 24
)

// layoutNode is what the layout needs of a node.
type layoutNode struct {
	Address string
	Kind    node.Kind
	Inputs  []string
}

// box is a node's place on the page.
type box struct {
	X, Y, W, H int
	Layer      int
}

// layout places nodes in columns left to right (a Sugiyama layout without
// dummy nodes, enough for pipelines): sources in the first column, each
// transform one column right of its furthest input, sinks in the last
// column. Within a column, nodes are ordered by the mean row of their
// inputs, then of their consumers, which removes most crossings of a
// pipeline's few edges. nodes are in topological order (every node after
// its inputs), as graph.Graph keeps them. It returns the boxes by address
// and the size of the drawing.
func layout(nodes []layoutNode) (map[string]box, int, int) {
	layer := map[string]int{}
	last := 0
	for _, n := range nodes {
		l := 0
		for _, in := range n.Inputs {
			if li, ok := layer[in]; ok && li+1 > l {
				l = li + 1
			}
		}
		layer[n.Address] = l
		last = max(last, l)
	}
	for _, n := range nodes {
		if n.Kind == node.KindSink && len(n.Inputs) > 0 {
			layer[n.Address] = max(last, 1)
		}
	}
	cols := make([][]string, max(last, 1)+1)
	for _, n := range nodes {
		cols[layer[n.Address]] = append(cols[layer[n.Address]], n.Address)
	}
	order(nodes, cols)
	tallest := 0
	for _, c := range cols {
		tallest = max(tallest, len(c))
	}
	height := 2*marginY + tallest*nodeH + max(tallest-1, 0)*rowGap
	boxes := map[string]box{}
	for l, c := range cols {
		colH := len(c)*nodeH + max(len(c)-1, 0)*rowGap
		y0 := (height - colH) / 2
		for i, a := range c {
			boxes[a] = box{X: marginX + l*(nodeW+colGap), Y: y0 + i*(nodeH+rowGap), W: nodeW, H: nodeH, Layer: l}
		}
	}
	width := 2*marginX + len(cols)*nodeW + (len(cols)-1)*colGap
	return boxes, width, height
}

// order sorts each column by the barycentre of the nodes' neighbours: a
// sweep left to right on inputs, then right to left on consumers.
func order(nodes []layoutNode, cols [][]string) {
	ins := map[string][]string{}
	outs := map[string][]string{}
	for _, n := range nodes {
		ins[n.Address] = n.Inputs
		for _, in := range n.Inputs {
			outs[in] = append(outs[in], n.Address)
		}
	}
	row := map[string]float64{}
	setRows := func(c []string) {
		for i, a := range c {
			row[a] = float64(i)
		}
	}
	byMean := func(c []string, nb map[string][]string) {
		mean := map[string]float64{}
		for _, a := range c {
			if len(nb[a]) == 0 {
				mean[a] = row[a]
				continue
			}
			s := 0.0
			for _, b := range nb[a] {
				s += row[b]
			}
			mean[a] = s / float64(len(nb[a]))
		}
		sort.SliceStable(c, func(i, j int) bool { return mean[c[i]] < mean[c[j]] })
		setRows(c)
	}
	for _, c := range cols {
		setRows(c)
	}
	for pass := 0; pass < 2; pass++ {
		for l := 1; l < len(cols); l++ {
			byMean(cols[l], ins)
		}
		for l := len(cols) - 2; l >= 0; l-- {
			byMean(cols[l], outs)
		}
	}
}
