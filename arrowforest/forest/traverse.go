package forest

// project evaluates oblique atom slot s on row x in float32, in atom order
// (the arithmetic training used).
func (c *Compiled) project(s int32, x []float32) float32 {
	var v float32
	for q := c.atomOff[s]; q < c.atomOff[s+1]; q++ {
		v += x[c.atomIdx[q]] * c.atomW[q]
	}
	return v
}
