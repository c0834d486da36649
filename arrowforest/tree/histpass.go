package tree

// histSlotBins is the number of bins of a one-pass histogram slot: the
// 255 codes of non-missing bins and MissingCode last, so a missing row
// lands in its own bin without a branch.
const histSlotBins = MaxBins + 1

// passFeatures is the number of histograms one pass over the rows fills
// (16 of two classes are 64 KiB); passClasses the most classes for which
// the builder fills several at once.
const (
	passFeatures = 16
	passClasses  = 8
)

// occRows is the node size below which buildHists marks the occupied
// bins (most of 255 bins are then empty).
const occRows = 256

// The histogram pass asks for the codes of the rows prefetchAhead rows
// ahead of the one it reads, prefetchChunk rows a call (prefetchRows): a
// deep node's rows are scattered over the n·p codes, at a million rows far
// more than the caches hold, and a core waiting on one row's line had few
// others in flight (issue 31: the pass was 45 % of the CPU of 1M-row
// training, nearly all of it on the load of the row's code). XGBoost's
// hist builder prefetches its rows the same way. Chunks of 4–16 rows and
// distances of 16–64 rows measured alike (BenchmarkGrowCodes), all well
// below no prefetch.
const (
	prefetchChunk = 16
	prefetchAhead = 32
)

// buildHists fills, for every candidate of the node that searchBinned
// would search (an axis atom of a binned feature of at least two bins,
// histogram cheaper than sort), its histogram in b.hbuf, reading each row's
// codes from the row-major copy (Binned.rows) once per passFeatures
// candidates instead of from one column per candidate: in a deep node the
// rows are scattered, and one row's codes share a cache line where the
// columns' do not; it prefetches the rows it reads next (prefetchAhead).
// Each bin sums the same weights in the same row order as
// searchBinned, so the split found is the same to the bit. It returns
// false, leaving searchBinned to every candidate, for data it does not
// cover: no row-major codes, several outputs, distances, or more than
// passClasses classes.
func (b *Builder) buildHists(s, e int) bool {
	bins := b.d.Bins
	if bins == nil || bins.rows == nil || b.q > 1 || b.d.Dist != nil || b.sparse || b.d.K > passClasses {
		return false
	}
	n := e - s
	b.hslot, b.hfeat = b.hslot[:0], b.hfeat[:0]
	for a := 0; a < b.cand.Len(); a++ {
		slot := int32(-1)
		if j, axis := b.cand.IsAxis(a); axis && bins.NBins(int(j)) >= 2 && b.useHist(int(j), n) {
			slot = int32(len(b.hfeat))
			b.hfeat = append(b.hfeat, j)
		}
		b.hslot = append(b.hslot, slot)
	}
	if len(b.hfeat) == 0 {
		return true
	}
	K := b.d.K
	if K == 0 {
		K = 2 // regression: (w, w·y)
	}
	stride := histSlotBins * K
	if need := len(b.hfeat) * stride; cap(b.hbuf) < need {
		b.hbuf = make([]float64, need)
	}
	hb := b.hbuf[:len(b.hfeat)*stride]
	for f, j := range b.hfeat {
		h := hb[f*stride : (f+1)*stride]
		clear(h[:bins.NBins(int(j))*K])
		clear(h[MissingCode*K:])
	}
	p := len(bins.Codes)
	rows := bins.rows
	for g0 := 0; g0 < len(b.hfeat); g0 += passFeatures {
		fs := b.hfeat[g0:min(g0+passFeatures, len(b.hfeat))]
		h := hb[g0*stride:]
		if b.d.K > 0 {
			for k0 := s; k0 < e; k0 += prefetchChunk {
				if a := k0 + prefetchAhead; a < e {
					prefetchRows(rows, b.idx[a:min(a+prefetchChunk, e)], p)
				}
				for k := k0; k < min(k0+prefetchChunk, e); k++ {
					row := rows[int(b.idx[k])*p:][:p]
					y, w := int(b.y[k]), b.w[k]
					for f, j := range fs {
						h[f*stride+int(row[j])*K+y] += w
					}
				}
			}
			continue
		}
		for k0 := s; k0 < e; k0 += prefetchChunk {
			if a := k0 + prefetchAhead; a < e {
				prefetchRows(rows, b.idx[a:min(a+prefetchChunk, e)], p)
			}
			for k := k0; k < min(k0+prefetchChunk, e); k++ {
				row := rows[int(b.idx[k])*p:][:p]
				w := b.w[k]
				wy := w * b.yr[k]
				for f, j := range fs {
					i := f*stride + int(row[j])*2
					h[i] += w
					h[i+1] += wy
				}
			}
		}
	}
	// a small node marks its occupied bins, so that the scans skip the
	// empty ones instead of visiting every bin
	b.hocc = b.hocc[:0]
	if n < occRows {
		b.hocc = append(b.hocc, make([]uint64, 4*len(b.hfeat))...)
		occ := b.hocc
		for k := s; k < e; k++ {
			row := rows[int(b.idx[k])*p:][:p]
			for f, j := range b.hfeat {
				c := row[j]
				occ[4*f+int(c>>6)] |= 1 << (c & 63)
			}
		}
	}
	if b.d.K == 0 { // the node's totals, summed as searchBinned sums them
		var n, sum float64
		for k := s; k < e; k++ {
			w := b.w[k]
			n += w
			sum += w * b.yr[k]
		}
		b.hn = [2]float64{n, sum}
	}
	return true
}

// scanSlot is searchBinned for feature j from its one-pass histogram.
func (b *Builder) scanSlot(j, slot int) split {
	nb := b.d.Bins.NBins(j)
	K := b.d.K
	if K == 0 {
		K = 2
	}
	stride := histSlotBins * K
	h := b.hbuf[slot*stride : (slot+1)*stride]
	var occ []uint64
	if len(b.hocc) > 0 {
		occ = b.hocc[4*slot : 4*slot+4]
	}
	if b.d.K > 0 {
		copy(b.miss, h[MissingCode*K:])
		return b.scanClasses(j, h[:nb*K], occ)
	}
	return b.scanReg(j, h[:nb*2], b.hn[0], b.hn[1], h[MissingCode*2], h[MissingCode*2+1], occ)
}
