//go:build !amd64 || purego

package forest

// walk8 walks eight key rows through the tree at root (see walk8Go).
func (w *axisWalk) walk8(root int32, x []uint32, out []int32) { w.walk8Go(root, x, out) }
