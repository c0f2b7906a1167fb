package embed

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unicode/utf8"
)

// The word-vector file format, written by WriteWordVectors (and so by
// cmd/glove-convert) and read by the offline embedder. All integers are
// little-endian.
//
//	magic      8 bytes  "SSWVI8v1"
//	dim        uint32   vector length
//	rows       uint32   number of words kept
//	vocabSize  uint32   size of the source vocabulary that ranks refer to
//	rows × { scale float32, dim × int8 }        value = int8 × scale
//	rows × { rank uvarint, len uvarint, word }  rank is 1-based, ascending
//
// Vectors come first so that they sit at fixed offsets; words follow as a
// compact list. A frequency rank is kept per word because the converter
// drops vocabulary entries the tokenizer can never produce (punctuation,
// "n't"), and the Zipf estimate of a word's probability must use its rank
// in the full source vocabulary, not its position in the file.
const (
	vectorFileMagic  = "SSWVI8v1"
	vectorHeaderSize = len(vectorFileMagic) + 3*4
	// maxVectorDim bounds dim so that a corrupt header cannot ask for an
	// absurd allocation; real static word vectors are 50–300 wide.
	maxVectorDim = 4096
)

// WordVector is one row of a word-vector file: a word, its 1-based rank in
// the source vocabulary ordered by descending frequency, and its vector.
type WordVector struct {
	Word   string
	Rank   int
	Vector []float32
}

// WriteWordVectors writes rows as an int8-quantised word-vector file, the
// format the offline embedder embeds. Each row is scaled by its own
// largest absolute component, which keeps the relative error per
// component within 1/254 of that maximum while storing 1 byte per value.
//
// rows must be in ascending rank order with ranks in [1, vocabSize], every
// vector of the same length, and every word a distinct token as the
// embedders tokenise text (lowercase letters and digits); otherwise it
// returns an error wrapping ErrVectorFile.
func WriteWordVectors(w io.Writer, vocabSize int, rows []WordVector) error {
	if len(rows) == 0 {
		return fmt.Errorf("%w: no rows to write", ErrVectorFile)
	}
	dim := len(rows[0].Vector)
	if dim < 1 || dim > maxVectorDim {
		return fmt.Errorf("%w: vector length %d is outside 1..%d", ErrVectorFile, dim, maxVectorDim)
	}
	if vocabSize < len(rows) || vocabSize > math.MaxUint32 {
		return fmt.Errorf("%w: vocabulary size %d is smaller than the %d rows or too large", ErrVectorFile, vocabSize, len(rows))
	}
	seen := make(map[string]struct{}, len(rows))
	prevRank := 0
	for i, r := range rows {
		if len(r.Vector) != dim {
			return fmt.Errorf("%w: row %d (%q) has %d components, want %d", ErrVectorFile, i, r.Word, len(r.Vector), dim)
		}
		if r.Rank <= prevRank || r.Rank > vocabSize {
			return fmt.Errorf("%w: row %d (%q) has rank %d; ranks must ascend within 1..%d", ErrVectorFile, i, r.Word, r.Rank, vocabSize)
		}
		prevRank = r.Rank
		if !IsToken(r.Word) {
			return fmt.Errorf("%w: row %d: %q is not a lowercase letter/digit token", ErrVectorFile, i, r.Word)
		}
		if _, dup := seen[r.Word]; dup {
			return fmt.Errorf("%w: row %d: duplicate word %q", ErrVectorFile, i, r.Word)
		}
		seen[r.Word] = struct{}{}
		for j, v := range r.Vector {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%w: row %d (%q) component %d is %v", ErrVectorFile, i, r.Word, j, v)
			}
		}
	}

	bw := bufio.NewWriter(w)
	var hdr [vectorHeaderSize]byte
	copy(hdr[:], vectorFileMagic)
	binary.LittleEndian.PutUint32(hdr[8:], uint32(dim))
	binary.LittleEndian.PutUint32(hdr[12:], uint32(len(rows)))
	binary.LittleEndian.PutUint32(hdr[16:], uint32(vocabSize))
	bw.Write(hdr[:])
	row := make([]byte, 4+dim)
	for _, r := range rows {
		var maxAbs float32
		for _, v := range r.Vector {
			maxAbs = max(maxAbs, float32(math.Abs(float64(v))))
		}
		scale := maxAbs / 127
		binary.LittleEndian.PutUint32(row, math.Float32bits(scale))
		for j, v := range r.Vector {
			var q float64
			if scale > 0 {
				q = math.Round(float64(v / scale))
			}
			row[4+j] = byte(int8(max(-127, min(127, q))))
		}
		bw.Write(row)
	}
	var num [binary.MaxVarintLen64]byte
	for _, r := range rows {
		bw.Write(binary.AppendUvarint(num[:0], uint64(r.Rank)))
		bw.Write(binary.AppendUvarint(num[:0], uint64(len(r.Word))))
		bw.WriteString(r.Word)
	}
	// bufio.Writer keeps the first write error and returns it here.
	return bw.Flush()
}

// wordVectors is a parsed word-vector file. Vectors stay in the file's
// bytes (int8 as bytes) so loading copies nothing but the word index.
type wordVectors struct {
	dim       int
	vocabSize int
	data      []byte    // the whole file
	scales    []float32 // per row
	words     []string
	ranks     []int
	index     map[string]int32
}

// stride is the number of bytes per vector row (scale + components).
func (f *wordVectors) stride() int { return 4 + f.dim }

// row returns row i's quantised components; value j is int8(row[j]) × scales[i].
func (f *wordVectors) row(i int) []byte {
	off := vectorHeaderSize + i*f.stride() + 4
	return f.data[off : off+f.dim]
}

// parseWordVectors validates and indexes a word-vector file. data is
// retained, not copied.
func parseWordVectors(data []byte) (*wordVectors, error) {
	if len(data) < vectorHeaderSize || string(data[:8]) != vectorFileMagic {
		return nil, fmt.Errorf("%w: missing %q header", ErrVectorFile, vectorFileMagic)
	}
	dim := int(binary.LittleEndian.Uint32(data[8:]))
	rows := int(binary.LittleEndian.Uint32(data[12:]))
	vocab := int(binary.LittleEndian.Uint32(data[16:]))
	if dim < 1 || dim > maxVectorDim {
		return nil, fmt.Errorf("%w: dimension %d is outside 1..%d", ErrVectorFile, dim, maxVectorDim)
	}
	if rows < 1 || vocab < rows {
		return nil, fmt.Errorf("%w: %d rows from a vocabulary of %d", ErrVectorFile, rows, vocab)
	}
	f := &wordVectors{dim: dim, vocabSize: vocab, data: data}
	// Divide rather than multiply, so a corrupt row count cannot overflow.
	if rows > (len(data)-vectorHeaderSize)/f.stride() {
		return nil, fmt.Errorf("%w: truncated: %d rows of %d bytes do not fit in %d bytes", ErrVectorFile, rows, f.stride(), len(data))
	}
	vecEnd := vectorHeaderSize + rows*f.stride()
	f.scales = make([]float32, rows)
	for i := range rows {
		s := math.Float32frombits(binary.LittleEndian.Uint32(data[vectorHeaderSize+i*f.stride():]))
		if s < 0 || math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			return nil, fmt.Errorf("%w: row %d has scale %v", ErrVectorFile, i, s)
		}
		f.scales[i] = s
	}
	f.words = make([]string, rows)
	f.ranks = make([]int, rows)
	f.index = make(map[string]int32, rows)
	rest := data[vecEnd:]
	// One string for the whole word list, sliced per word: one allocation
	// instead of 50,000 at load time.
	text := string(rest)
	prevRank := uint64(0)
	for i := range rows {
		rank, n := binary.Uvarint(rest)
		if n <= 0 {
			return nil, fmt.Errorf("%w: word list truncated at row %d", ErrVectorFile, i)
		}
		rest = rest[n:]
		wlen, n := binary.Uvarint(rest)
		if n <= 0 || wlen == 0 || wlen > uint64(len(rest)-n) {
			return nil, fmt.Errorf("%w: word list truncated at row %d", ErrVectorFile, i)
		}
		rest = rest[n:]
		start := len(text) - len(rest)
		word := rest[:wlen]
		rest = rest[wlen:]
		if rank <= prevRank || rank > uint64(vocab) {
			return nil, fmt.Errorf("%w: row %d has rank %d; ranks must ascend within 1..%d", ErrVectorFile, i, rank, vocab)
		}
		prevRank = rank
		if !utf8.Valid(word) {
			return nil, fmt.Errorf("%w: row %d word is not UTF-8", ErrVectorFile, i)
		}
		w := text[start : start+int(wlen)]
		if _, dup := f.index[w]; dup {
			return nil, fmt.Errorf("%w: duplicate word %q at row %d", ErrVectorFile, w, i)
		}
		f.words[i] = w
		f.ranks[i] = int(rank)
		f.index[w] = int32(i)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d unexpected trailing bytes", ErrVectorFile, len(rest))
	}
	return f, nil
}
