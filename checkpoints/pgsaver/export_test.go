package pgsaver

// WithDeltaFanOut returns opts with the skip deltas' fan-out set to k, for
// the benchmarks that choose it.
func WithDeltaFanOut(opts Options, k int) *Options {
	opts.deltaFanOut = k
	return &opts
}
