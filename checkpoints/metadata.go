package checkpoints

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/superstep-dev/superstep/internal/jsonfast"
)

var metadataFields = map[string]bool{"source": true, "step": true, "parents": true, "run_id": true}

// MarshalJSON encodes the metadata as one flat object: the known fields
// plus Extra's keys (keys that collide with known fields are dropped). Keys
// come out sorted, as encoding/json sorts map keys.
func (m Metadata) MarshalJSON() ([]byte, error) {
	if len(m.Extra) == 0 {
		// The common case, written by hand: it runs on every checkpoint.
		b := make([]byte, 0, 64+32*len(m.Parents))
		b = append(b, `{"parents":{`...)
		keys := make([]string, 0, len(m.Parents))
		for k := range m.Parents {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonfast.AppendString(b, k)
			b = append(b, ':')
			b = jsonfast.AppendString(b, m.Parents[k])
		}
		b = append(b, '}')
		if m.RunID != "" {
			b = append(b, `,"run_id":`...)
			b = jsonfast.AppendString(b, m.RunID)
		}
		b = append(b, `,"source":`...)
		b = jsonfast.AppendString(b, string(m.Source))
		b = append(b, `,"step":`...)
		b = strconv.AppendInt(b, int64(m.Step), 10)
		return append(b, '}'), nil
	}
	out := make(map[string]any, len(m.Extra)+4)
	for k, v := range m.Extra {
		if !metadataFields[k] {
			out[k] = v
		}
	}
	out["source"] = m.Source
	out["step"] = m.Step
	parents := m.Parents
	if parents == nil {
		parents = map[string]string{}
	}
	out["parents"] = parents
	if m.RunID != "" {
		out["run_id"] = m.RunID
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes a flat metadata object; unknown keys go to Extra.
func (m *Metadata) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("checkpoints: metadata: %w", err)
	}
	*m = Metadata{}
	for k, v := range raw {
		var err error
		switch k {
		case "source":
			err = json.Unmarshal(v, &m.Source)
		case "step":
			err = json.Unmarshal(v, &m.Step)
		case "parents":
			err = json.Unmarshal(v, &m.Parents)
		case "run_id":
			err = json.Unmarshal(v, &m.RunID)
		default:
			var x any
			err = json.Unmarshal(v, &x)
			if m.Extra == nil {
				m.Extra = map[string]any{}
			}
			m.Extra[k] = x
		}
		if err != nil {
			return fmt.Errorf("checkpoints: metadata key %q: %w", k, err)
		}
	}
	if m.Parents == nil {
		m.Parents = map[string]string{}
	}
	return nil
}
