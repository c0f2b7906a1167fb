package checkpoints

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestMetadataEncodingMatchesEncodingJSON: the hand-written encoder of the
// common case gives the same document as encoding/json would.
func TestMetadataEncodingMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, md := range []Metadata{
		{Source: SourceLoop, Step: 3},
		{Source: SourceInput, Step: -1, Parents: map[string]string{"": "abc", "p:1": "d\"e\\f<g>&\u2028\x01é"}},
		{Source: SourceFork, Step: 0, RunID: "run \t\n\r\b\f 1 \ufffd"},
		{Source: "bad\xffutf8", Step: 1},
	} {
		got, err := md.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		parents := md.Parents
		if parents == nil {
			parents = map[string]string{}
		}
		ref := map[string]any{"source": md.Source, "step": md.Step, "parents": parents}
		if md.RunID != "" {
			ref["run_id"] = md.RunID
		}
		want, _ := json.Marshal(ref)
		if string(got) != string(want) {
			t.Errorf("encoded %s, encoding/json gives %s", got, want)
		}
		var back Metadata
		if err := json.Unmarshal(got, &back); err != nil || (md.Parents != nil && !reflect.DeepEqual(back.Parents, md.Parents)) {
			t.Errorf("round trip of %s: %+v %v", got, back, err)
		}
	}
}
