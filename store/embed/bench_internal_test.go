package embed

import "testing"

// BenchmarkOfflineLoad is the one-time cost the first Embed pays: verify
// the checksum, index 50k words, compute weights and the common direction.
func BenchmarkOfflineLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := loadSIF(gloveData, gloveSHA256, gloveDim); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/load")
}
