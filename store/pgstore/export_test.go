package pgstore

// WithMaxCandidates returns opts with the most candidates an index search
// reads set to n, so that tests reach the exact fallback on few vectors.
func WithMaxCandidates(opts Options, n int) Options {
	opts.maxCandidates = n
	return opts
}
