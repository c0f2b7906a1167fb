package embed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// The committed file, the embedded bytes, the constant the loader checks
// and the checksum NOTICE.md records must all agree: a regenerated file
// without an updated hash (or the reverse) fails here, not in production.
func TestCommittedGloVeFileMatchesRecordedHash(t *testing.T) {
	t.Parallel()
	disk, err := os.ReadFile(gloveFile)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(disk)
	if got := hex.EncodeToString(sum[:]); got != gloveSHA256 {
		t.Errorf("%s has sha256 %s, glove.go records %s", gloveFile, got, gloveSHA256)
	}
	if !bytes.Equal(disk, gloveData) {
		t.Errorf("the embedded bytes differ from %s on disk", gloveFile)
	}
	notice, err := os.ReadFile("NOTICE.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(notice), "\nsha256: "+gloveSHA256+"\n") {
		t.Errorf("NOTICE.md does not record the line %q", "sha256: "+gloveSHA256)
	}
	f, err := parseWordVectors(disk)
	if err != nil {
		t.Fatal(err)
	}
	if f.dim != gloveDim || len(f.words) != 50000 {
		t.Errorf("file holds %d words × %d dims, want 50000 × %d", len(f.words), f.dim, gloveDim)
	}
}

func TestLoadSIFRejectsTamperedFile(t *testing.T) {
	t.Parallel()
	data := bytes.Clone(gloveData)
	data[len(data)/2] ^= 1
	_, err := loadSIF(data, gloveSHA256, gloveDim)
	if !errors.Is(err, ErrVectorFile) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("loadSIF(tampered) = %v; want ErrVectorFile naming the checksum", err)
	}
}

// TestSIFMath checks the pipeline on a vocabulary small enough to compute
// by hand: SIF weights from Zipf probabilities, removal of the common
// direction, normalisation.
func TestSIFMath(t *testing.T) {
	t.Parallel()
	const vocab = 1000
	rows := []WordVector{
		{Word: "alpha", Rank: 1, Vector: []float32{127, 0, 0}},
		{Word: "beta", Rank: 10, Vector: []float32{0, 127, -127}},
		{Word: "gamma", Rank: 1000, Vector: []float32{-127, 127, 127}},
	}
	var buf bytes.Buffer
	if err := WriteWordVectors(&buf, vocab, rows); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	m, err := loadSIF(buf.Bytes(), hex.EncodeToString(sum[:]), 3)
	if err != nil {
		t.Fatal(err)
	}

	var h float64
	for r := 1; r <= vocab; r++ {
		h += 1 / float64(r)
	}
	p := func(rank int) float64 { return 1 / (float64(rank) * h) }
	var common [3]float64
	for _, r := range rows {
		for j, x := range r.Vector {
			common[j] += p(r.Rank) * float64(x)
		}
	}
	unit(common[:])

	cases := []struct {
		text  string
		words []int // rows in the text, repeats included
	}{
		{"alpha beta", []int{0, 1}},
		{"Gamma! beta, gamma?", []int{2, 1, 2}},
		{"beta and an unknown word", []int{1}},
		{"nothing known", nil},
	}
	for _, tc := range cases {
		var want [3]float64
		for _, i := range tc.words {
			w := sifA / (sifA + p(rows[i].Rank))
			for j, x := range rows[i].Vector {
				want[j] += w * float64(x)
			}
		}
		var proj float64
		for j := range want {
			proj += want[j] * common[j]
		}
		for j := range want {
			want[j] -= proj * common[j]
		}
		unit(want[:])

		got, err := m.embedAll(t.Context(), []string{tc.text})
		if err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if math.Abs(float64(got[0][j])-want[j]) > 1e-5 {
				t.Errorf("%q: got %v, want %v", tc.text, got[0], want)
				break
			}
		}
	}
}

func unit(v []float64) {
	var n float64
	for _, x := range v {
		n += x * x
	}
	if n == 0 {
		return
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] /= n
	}
}

func TestSIFEmbedStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	m, err := gloveModel()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.embedAll(ctx, []string{"anything"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("embedAll(cancelled) = %v, want context.Canceled", err)
	}
}
