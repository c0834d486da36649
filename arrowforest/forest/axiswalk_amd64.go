//go:build amd64 && !purego

package forest

// walk8asm is axisWalk.walk8 in assembly (axiswalk_amd64.s): the same
// steps, with the eight node indices held in registers (the compiled Go
// walk8 spills half of them and checks bounds on every load, about twice
// the instructions a step needs). nodes must be the layout's nodes and x
// eight key rows of stride keys; the layout's indices are checked when it
// is built (newAxisWalk, compactAxisWalk), so the kernel loads unchecked.
//
//go:noescape
func walk8asm(nodes *anode, x *uint32, stride int, root int32, out *int32)

// walk8 walks eight key rows through the tree at root (see walk8Go).
func (w *axisWalk) walk8(root int32, x []uint32, out []int32) {
	_ = x[8*w.stride-1]
	_ = out[7]
	walk8asm(&w.nodes[0], &x[0], w.stride, root, &out[0])
}
