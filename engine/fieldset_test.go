package engine_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

type celsius float64

type point struct{ X, Y int }

type kinds struct {
	I8   int8              `json:"i8"`
	U16  uint16            `json:"u16"`
	I32  int32             `json:"i32"`
	F32  float32           `json:"f32"`
	C64  complex64         `json:"c64"` // at a 4-aligned offset (12)
	C128 complex128        `json:"c128"`
	B    bool              `json:"b"`
	S    string            `json:"s"`
	Deg  celsius           `json:"deg"`
	Ints []int             `json:"ints"`
	M    map[string]int    `json:"m"`
	P    *point            `json:"p"`
	Pt   point             `json:"pt"`
	Arr  [3]string         `json:"arr"`
	Any  any               `json:"any"`
	Err  error             `json:"err"`
	Nest map[string][]byte `json:"nest"`
	Big  int64             `json:"big"`
	Last string            `json:"last"`
}

// Every kind of state field reaches nodes and routers as it was written:
// the fast field setters and the reflect fallback agree.
func TestStateFieldsOfEveryKind(t *testing.T) {
	t.Parallel()
	want := kinds{
		I8: -7, U16: 65000, I32: -1 << 30, F32: 1.5, C64: complex(-1, 0.25), C128: complex(2, -3), B: true, S: "héllo",
		Deg: 21.5, Ints: []int{1, 2, 3}, M: map[string]int{"a": 1}, P: &point{1, 2}, Pt: point{3, 4},
		Arr: [3]string{"x", "y", "z"}, Any: []any{"n", 1.0}, Err: errors.New("boom"),
		Nest: map[string][]byte{"k": []byte("v")}, Big: 1 << 60, Last: "end",
	}
	g := engine.NewStateGraph[kinds]()
	g.AddNode("write", func(context.Context, kinds) (engine.Output, error) {
		return engine.Update{
			"i8": want.I8, "u16": want.U16, "i32": want.I32, "f32": want.F32, "c64": want.C64, "c128": want.C128,
			"b": want.B, "s": want.S, "deg": want.Deg, "ints": want.Ints, "m": want.M, "p": want.P,
			"pt": want.Pt, "arr": want.Arr, "any": want.Any, "err": want.Err, "nest": want.Nest,
			"big": want.Big,
		}, nil
	})
	var routed, read kinds
	g.AddConditionalEdges("write", func(_ context.Context, s kinds) (engine.Route, error) {
		routed = s
		return engine.To("read"), nil
	}, nil)
	g.AddNode("read", func(_ context.Context, s kinds) (engine.Output, error) {
		read = s
		return engine.Set("last", "end"), nil
	})
	g.AddEdge(engine.Start, "write")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(context.Background(), engine.Set("last", "start"), nil)
	if err != nil {
		t.Fatal(err)
	}
	routedWant := want
	routedWant.Last = "start"
	for name, got := range map[string]struct{ got, want kinds }{
		"router": {routed, routedWant}, "node": {read, routedWant}, "output": {out, want},
	} {
		if !reflect.DeepEqual(got.got, got.want) {
			t.Errorf("%s saw\n%+v\nwant\n%+v", name, got.got, got.want)
		}
	}
}
