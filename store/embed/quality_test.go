package embed_test

import (
	"context"
	"math"
	"testing"

	"github.com/superstep-dev/superstep/store/embed"
)

// qualityDocs is a small retrieval corpus across unrelated topics, with
// several documents per topic so that a query must find the right
// document, not just the right topic.
var qualityDocs = map[string]string{
	"graph-interrupt":  "The agent graph stops at an interrupt and waits for a human to approve the tool call.",
	"graph-superstep":  "Each superstep runs the triggered nodes in parallel, then applies their writes to the channels.",
	"graph-checkpoint": "A checkpoint of the state is saved to the database after every step, so a thread can resume later.",
	"graph-toolchoice": "The language model chooses which tool to call next based on the conversation history.",
	"db-index":         "Create an index on the column to speed up lookups in a large table.",
	"db-rollback":      "The transaction was rolled back because two writers tried to update the same row.",
	"db-backup":        "Nightly backups of the database are copied to a storage bucket in another region.",
	"db-replication":   "Replication keeps a standby server in sync with the primary.",
	"cook-sauce":       "Simmer the tomato sauce with garlic and basil for twenty minutes.",
	"cook-bread":       "Knead the bread dough until it is smooth, then let it rise in a warm place.",
	"cook-steak":       "Grill the steak over high heat and let it rest before slicing.",
	"cook-cake":        "Whisk eggs, sugar and butter together to make a sponge cake batter.",
	"travel-delay":     "Our flight to Tokyo was delayed by three hours at the airport.",
	"travel-hotel":     "The hotel room had a balcony overlooking the beach.",
	"travel-passport":  "Remember to renew your passport before booking an international trip.",
	"travel-drive":     "We rented a car and drove along the coast through small villages.",
	"sport-football":   "The striker scored twice in the second half to win the match.",
	"sport-marathon":   "She finished the marathon in under three hours.",
	"sport-tennis":     "The tennis champion lost the final in five sets.",
	"sport-trade":      "The basketball team traded their point guard before the season started.",
	"fin-rates":        "The central bank raised interest rates to fight inflation.",
	"fin-shares":       "Shares of the company fell after it reported lower quarterly profits.",
	"fin-retirement":   "Diversify your retirement savings across stocks and bonds.",
	"fin-mortgage":     "The mortgage payment is due on the first day of each month.",
	"health-antibio":   "The doctor prescribed antibiotics for the throat infection.",
	"health-heart":     "Regular exercise and enough sleep lower the risk of heart disease.",
	"garden-seedlings": "Water the tomato seedlings every morning and keep them in full sun.",
	"garden-prune":     "Prune the rose bushes in late winter before new growth appears.",
	"weather-snow":     "Heavy snow closed the mountain roads overnight.",
	"weather-heat":     "A heat wave pushed temperatures above forty degrees.",
}

// qualityQueries paraphrase one document each while sharing as few words
// with it as English allows (function words aside).
var qualityQueries = []struct{ query, want string }{
	{"pause the workflow until a person signs off on the action", "graph-interrupt"},
	{"all activated vertices execute concurrently and their outputs are merged into shared values at the end of each round", "graph-superstep"},
	{"persist a snapshot of progress in sql storage each iteration so the conversation may continue afterwards", "graph-checkpoint"},
	{"the llm decides what function to invoke using previous messages", "graph-toolchoice"},
	{"add a b-tree so searching a big dataset is quicker", "db-index"},
	{"a concurrent edit conflict aborted the commit", "db-rollback"},
	{"every evening the records are archived offsite in a different country", "db-backup"},
	{"a secondary machine mirrors the main one continuously", "db-replication"},
	{"let the marinara bubble gently with herbs for a third of an hour", "cook-sauce"},
	{"work the flour mixture by hand and leave it to proof", "cook-bread"},
	{"barbecue the beef on a hot flame and wait before cutting it", "cook-steak"},
	{"beat yolks with sweetener to prepare a dessert mix", "cook-cake"},
	{"the airline departure was postponed", "travel-delay"},
	{"our accommodation had a terrace with a view of the sea", "travel-hotel"},
	{"check that your travel document has not expired before going abroad", "travel-passport"},
	{"road trip by automobile along the seaside past little towns", "travel-drive"},
	{"the forward netted two goals after halftime and his side won the game", "sport-football"},
	{"she ran the 42 km race in less than 180 minutes", "sport-marathon"},
	{"the number one racket player was beaten in the title game", "sport-tennis"},
	{"monetary authorities lifted borrowing costs to curb rising prices", "fin-rates"},
	{"the stock dropped when earnings disappointed investors", "fin-shares"},
	{"spread your pension money over equities and fixed income", "fin-retirement"},
	{"monthly home loan installments are owed on day one", "fin-mortgage"},
	{"the physician gave medication to treat a bacterial sore", "health-antibio"},
	{"trim the flowering shrubs at the end of the cold season", "garden-prune"},
	{"a blizzard blocked the highways in the hills during the night", "weather-snow"},
	{"scorching weather sent thermometers past 40", "weather-heat"},
}

// retrievalScores embeds the corpus and the queries with e and returns
// top-1 accuracy and mean reciprocal rank. Ties count against the target
// (it ranks below every document with an equal score), so an embedder
// that returns zero vectors cannot score by luck.
func retrievalScores(t *testing.T, e interface {
	Embed(context.Context, []string) ([][]float32, error)
}) (top1, mrr float64) {
	t.Helper()
	ids := make([]string, 0, len(qualityDocs))
	texts := make([]string, 0, len(qualityDocs))
	for id, text := range qualityDocs {
		ids = append(ids, id)
		texts = append(texts, text)
	}
	docVecs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	queries := make([]string, len(qualityQueries))
	for i, q := range qualityQueries {
		queries[i] = q.query
	}
	qVecs, err := e.Embed(t.Context(), queries)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range qualityQueries {
		var target float64
		found := false
		for j, id := range ids {
			if id == q.want {
				target, found = cosine(qVecs[i], docVecs[j]), true
			}
		}
		if !found {
			t.Fatalf("query %q targets unknown document %q", q.query, q.want)
		}
		rank := 1
		for j, id := range ids {
			if id != q.want && cosine(qVecs[i], docVecs[j]) >= target {
				rank++
			}
		}
		if rank == 1 {
			top1++
		}
		mrr += 1 / float64(rank)
	}
	n := float64(len(qualityQueries))
	return top1 / n, mrr / n
}

// cosine is the similarity callers compute, with cosine against a zero
// vector defined as 0.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// TestRetrievalQuality is the semantic smoke test of the offline
// embedders. Chance is 1/30 top-1 and about 0.13 MRR. The lexical hasher
// can only match shared words or word pieces, which the queries avoid, so
// it should stay near chance; GloVe must beat it and find the right
// document for at least half of the queries: 15× chance, and the level
// below which the offline default would not be worth shipping over the
// fallback.
func TestRetrievalQuality(t *testing.T) {
	t.Parallel()
	if len(qualityDocs) < 24 || len(qualityQueries) < 20 {
		t.Fatalf("the set needs at least 24 documents and 20 queries, has %d and %d", len(qualityDocs), len(qualityQueries))
	}
	lexTop1, lexMRR := retrievalScores(t, embed.NewLexical(256))
	gloveTop1, gloveMRR := retrievalScores(t, embed.Offline())
	t.Logf("%d docs, %d queries", len(qualityDocs), len(qualityQueries))
	t.Logf("lexical-xxh3-256: top-1 %.3f  MRR %.3f", lexTop1, lexMRR)
	t.Logf("glove100d-sif:    top-1 %.3f  MRR %.3f", gloveTop1, gloveMRR)

	const floor = 0.5
	if gloveTop1 < floor {
		t.Errorf("glove100d-sif top-1 = %.3f, want ≥ %.2f", gloveTop1, floor)
	}
	if gloveTop1 <= lexTop1 || gloveMRR <= lexMRR {
		t.Errorf("glove100d-sif (top-1 %.3f, MRR %.3f) does not beat lexical-xxh3-256 (top-1 %.3f, MRR %.3f)", gloveTop1, gloveMRR, lexTop1, lexMRR)
	}
}
