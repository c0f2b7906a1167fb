package pgsaver

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// A put's parameters go to pgx as the types below rather than as strings,
// byte slices and slices of them. pgx encodes a [][]byte through
// reflection, and any array by boxing each element in an interface, one
// allocation an element; a string or []byte parameter is boxed too. For a
// sync superstep this cost more client time than the rest of the plan.
// These types hand pgx pointers (an interface holding a pointer allocates
// nothing) through the valuer interfaces its codecs take, so pgx writes
// the same bytes with no reflection and no allocation of its own.
//
// Each is a named form of the value it points to: (*textArray)(&s) for
// an s []string. A nil array is sent as the empty array '{}', as the
// statements expect, never as NULL.
type (
	// textArray is a text[] parameter.
	textArray []string
	// int8Array is a bigint[] parameter.
	int8Array []int64
	// byteaArray is a bytea[] parameter; a nil element is NULL.
	byteaArray [][]byte
	// textParam is a text parameter, or an element of a textArray.
	textParam string
	// int8Param is a bigint parameter, or an element of an int8Array.
	int8Param int64
	// byteaParam is a bytea parameter, or an element of a byteaArray;
	// nil is NULL.
	byteaParam []byte
	// jsonParam is a jsonb (or json) parameter, JSON text; nil is NULL.
	jsonParam []byte
)

// TextValue implements pgtype.TextValuer.
func (p *textParam) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*p), Valid: true}, nil
}

// Int64Value implements pgtype.Int64Valuer.
func (p *int8Param) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*p), Valid: true}, nil
}

// BytesValue implements pgtype.BytesValuer.
func (p *byteaParam) BytesValue() ([]byte, error) { return *p, nil }

// Value implements driver.Valuer, which pgx's json codecs take (as the
// []byte they encode) before anything they would marshal.
func (p *jsonParam) Value() (driver.Value, error) {
	if *p == nil {
		return nil, nil
	}
	return []byte(*p), nil
}

// Dimensions, Index and IndexType implement pgtype.ArrayGetter.
func (a *textArray) Dimensions() []pgtype.ArrayDimension { return dimensions(len(*a)) }
func (a *textArray) Index(i int) any                     { return (*textParam)(&(*a)[i]) }
func (a *textArray) IndexType() any                      { return (*textParam)(nil) }

// Dimensions, Index and IndexType implement pgtype.ArrayGetter.
func (a *int8Array) Dimensions() []pgtype.ArrayDimension { return dimensions(len(*a)) }
func (a *int8Array) Index(i int) any                     { return (*int8Param)(&(*a)[i]) }
func (a *int8Array) IndexType() any                      { return (*int8Param)(nil) }

// Dimensions, Index and IndexType implement pgtype.ArrayGetter.
func (a *byteaArray) Dimensions() []pgtype.ArrayDimension { return dimensions(len(*a)) }
func (a *byteaArray) Index(i int) any                     { return (*byteaParam)(&(*a)[i]) }
func (a *byteaArray) IndexType() any                      { return (*byteaParam)(nil) }

// oneDimension[n] is the dimensions of an array of n elements, shared
// (pgx only reads them) so that Dimensions allocates nothing for the
// arrays a put sends.
var oneDimension = func() (d [32][1]pgtype.ArrayDimension) {
	for n := range d {
		d[n][0] = pgtype.ArrayDimension{Length: int32(n), LowerBound: 1}
	}
	return d
}()

// dimensions is the one dimension of an array of n elements.
func dimensions(n int) []pgtype.ArrayDimension {
	if n < len(oneDimension) {
		return oneDimension[n][:]
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

// paramEncoder encodes a statement's parameters itself, byte for byte and
// format for format as pgx would (TestParamsEncodeAsPgx), when each is one
// of the types above or a []byte for bytea or jsonb. It is what pgx's
// ExtendedQueryBuilder does without its per-parameter lookups of a plan
// by type and format, a third of a sync superstep's client work in
// BenchmarkPutFrameClient. An encoder is used by one statement at a time.
type paramEncoder struct {
	buf     []byte
	values  [][]byte
	formats []int16
	ends    []int // each value's end in buf, -1 for NULL
}

// encode encodes args for parameters of types oids into e.values and
// e.formats, or reports that pgx must encode them.
func (e *paramEncoder) encode(oids []uint32, args []any) bool {
	if len(oids) != len(args) {
		return false
	}
	if e.buf == nil {
		e.buf = make([]byte, 0, 1024) // never nil: an empty value is not NULL
	}
	buf, ends := e.buf[:0], e.ends[:0]
	e.formats = e.formats[:0]
	for i, arg := range args {
		oid, format, null := oids[i], int16(pgtype.BinaryFormatCode), false
		switch a := arg.(type) {
		case *textParam:
			if oid != pgtype.TextOID {
				return false
			}
			format, buf = pgtype.TextFormatCode, append(buf, *a...)
		case *int8Param:
			if oid != pgtype.Int8OID {
				return false
			}
			buf = binary.BigEndian.AppendUint64(buf, uint64(*a))
		case *byteaParam:
			if oid != pgtype.ByteaOID {
				return false
			}
			null, buf = *a == nil, append(buf, *a...)
		case *jsonParam:
			if oid != pgtype.JSONBOID && oid != pgtype.JSONOID {
				return false
			}
			format, null, buf = pgtype.TextFormatCode, *a == nil, append(buf, *a...)
		case []byte:
			switch oid {
			case pgtype.ByteaOID:
			case pgtype.JSONBOID, pgtype.JSONOID:
				format = pgtype.TextFormatCode // pgx's choice for json
			default:
				return false
			}
			null, buf = a == nil, append(buf, a...)
		case *textArray:
			if oid != pgtype.TextArrayOID {
				return false
			}
			buf = appendArrayHeader(buf, pgtype.TextOID, len(*a), false)
			for _, s := range *a {
				buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
				buf = append(buf, s...)
			}
		case *int8Array:
			if oid != pgtype.Int8ArrayOID {
				return false
			}
			buf = appendArrayHeader(buf, pgtype.Int8OID, len(*a), false)
			for _, n := range *a {
				buf = binary.BigEndian.AppendUint32(buf, 8)
				buf = binary.BigEndian.AppendUint64(buf, uint64(n))
			}
		case *byteaArray:
			if oid != pgtype.ByteaArrayOID {
				return false
			}
			buf = appendArrayHeader(buf, pgtype.ByteaOID, len(*a), slices.ContainsFunc(*a, isNil))
			for _, b := range *a {
				if b == nil {
					buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32) // -1: NULL
					continue
				}
				buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
				buf = append(buf, b...)
			}
		default:
			return false
		}
		end := len(buf)
		if null {
			end = -1
		}
		ends, e.formats = append(ends, end), append(e.formats, format)
	}
	e.buf, e.ends = buf, ends
	// The values are sliced once buf has stopped moving.
	e.values = e.values[:0]
	start := 0
	for _, end := range ends {
		if end < 0 {
			e.values = append(e.values, nil)
			continue
		}
		e.values = append(e.values, buf[start:end:end])
		start = end
	}
	return true
}

// appendArrayHeader appends the header of a one-dimensional array in
// binary format: n elements of type elem.
func appendArrayHeader(buf []byte, elem uint32, n int, hasNull bool) []byte {
	var null uint32
	if hasNull {
		null = 1
	}
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, null)
	buf = binary.BigEndian.AppendUint32(buf, elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	return binary.BigEndian.AppendUint32(buf, 1) // lower bound
}

func isNil(b []byte) bool { return b == nil }

// encodedStatement names the statements a put sends alone whose
// parameters the saver encodes itself (paramEncoder): the checkpoint row
// of a superstep whose values are all inline, unfenced or fenced. Each is
// prepared once per connection under its name, as pgx's statement cache
// would under a hash of it. Any other put (a value stored as a blob, new
// or its parent's; a special write; a checkpoint saved again; one the
// server resolves) sends more than one statement (a fence's check first,
// the thread's lock, writes' rows), as a batch pgx encodes. (A switch
// compares the constant's pointer first; a map would hash the SQL.)
func encodedStatement(sql string) (name string, ok bool) {
	switch sql {
	case sqlPutInline:
		return "pgsaver_put_inline", true
	case sqlPutInlineFenced:
		return "pgsaver_put_inline_fenced", true
	}
	return "", false
}

var encoders = sync.Pool{New: func() any { return new(paramEncoder) }}

// release returns e to encoders, without its buffers when a large write
// grew them: the pool must not hold megabytes for the next small step.
func (e *paramEncoder) release() {
	if cap(e.buf) > 64<<10 {
		*e = paramEncoder{}
	}
	encoders.Put(e)
}

// encodes reports whether a pool's connections may run statements with
// parameters the saver encodes: not when they have a tracer (which would
// not see those statements) or prepare no statements (an exec mode other
// than the default, as behind a transaction pooler).
func encodes(cfg *pgx.ConnConfig) bool {
	return cfg.Tracer == nil && cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
}

// execEncoded runs q, an encodedStatement, on a connection of
// pool, with the parameters paramEncoder encodes, or through pgx's Exec
// when the encoder does not take q's arguments. A statement the server
// forgot (DEALLOCATE, DISCARD ALL) is prepared again and run once more:
// the server refused it before running anything.
func execEncoded(ctx context.Context, pool batchSender, name string, q *pgx.QueuedQuery) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	conn := pc.Conn()
	e := encoders.Get().(*paramEncoder)
	defer e.release()
	for attempt := 0; ; attempt++ {
		sd, err := conn.Prepare(ctx, name, q.SQL)
		if err != nil {
			return err
		}
		if !e.encode(sd.ParamOIDs, q.Arguments) {
			_, err := conn.Exec(ctx, q.SQL, q.Arguments...)
			return err
		}
		_, err = conn.PgConn().ExecStatement(ctx, sd, e.values, e.formats, nil).Close()
		if err == nil || attempt > 0 || !forgotten(err) {
			return err
		}
		// pgx still holds the statement as prepared; closing one the
		// server does not have is no error.
		if err := conn.Deallocate(ctx, name); err != nil {
			return err
		}
	}
}

// forgotten reports the server's error for a prepared statement it does
// not have.
func forgotten(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "26000"
}
