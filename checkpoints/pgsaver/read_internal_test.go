package pgsaver

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// pageRows are a metadata-only listing's rows as the driver holds them
// (pgx.Rows read raw), for benchmarks of the client's share of a page
// without a server.
type pageRows struct {
	rows [][][]byte
	i    int
}

func (r *pageRows) Close()                        {}
func (r *pageRows) Err() error                    { return nil }
func (r *pageRows) CommandTag() pgconn.CommandTag { return pgconn.CommandTag{} }
func (r *pageRows) Conn() *pgx.Conn               { return nil }
func (r *pageRows) TypeMap() *pgtype.Map          { return nil }
func (r *pageRows) Values() ([]any, error)        { return nil, fmt.Errorf("pageRows: no values") }
func (r *pageRows) Scan(...any) error             { return fmt.Errorf("pageRows: no scan") }
func (r *pageRows) RawValues() [][]byte           { return r.rows[r.i-1] }
func (r *pageRows) Next() bool                    { r.i++; return r.i <= len(r.rows) }

func (r *pageRows) FieldDescriptions() []pgconn.FieldDescription {
	fds := make([]pgconn.FieldDescription, 6)
	fds[4].Format, fds[5].Format = pgtype.BinaryFormatCode, pgtype.TextFormatCode
	return fds
}

// historyPageRows are the rows of BenchmarkPGHistoryPage's page: the
// newest 50 of a thread's 1,000 checkpoints, newest first.
func historyPageRows() [][][]byte {
	var rows [][][]byte
	id := func(i int) string { return fmt.Sprintf("01a21685-e16a-7c4e-bd07-59c0230%05d", i) }
	ts := time.Date(2026, 11, 26, 6, 23, 22, 474806628, time.UTC)
	for i := 999; i >= 950; i-- {
		body := fmt.Sprintf(`{"v":1,"id":"%s","ts":"%s","next":["%s"],"channel_values":null,`+
			`"channel_versions":{"config":1,"messages":%d,"step":%d},"versions_seen":{"agent":{"messages":%d},"tools":{"messages":%d}},`+
			`"updated_channels":["messages","step"]}`,
			id(i), ts.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), [2]string{"tools", "agent"}[i%2], i+1, i+1, i, i)
		md := fmt.Sprintf(`{"step": %d, "user": "ann", "run_id": "run-1", "source": "loop", "parents": {}}`, i)
		rows = append(rows, [][]byte{[]byte("history"), []byte(""), []byte(id(i)), []byte(id(i - 1)), []byte(body), []byte(md)})
	}
	return rows
}

// BenchmarkCollectHeaders is the client's share of BenchmarkPGHistoryPage:
// a page of 50 headers built from rows already received.
func BenchmarkCollectHeaders(b *testing.B) {
	rows := historyPageRows()
	b.ReportAllocs()
	for b.Loop() {
		page, err := collectHeaders(&pageRows{rows: rows}, true, 50)
		if err != nil || len(page) != 50 || page[0].Metadata.Extra["user"] != "ann" || page[49].Metadata.Step != 950 {
			b.Fatalf("%d tuples, %v", len(page), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/page")
}
