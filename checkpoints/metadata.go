package checkpoints

import (
	"encoding/json"
	"fmt"
)

var metadataFields = map[string]bool{"source": true, "step": true, "parents": true, "run_id": true}

// MarshalJSON encodes the metadata as one flat object: the known fields
// plus Extra's keys (keys that collide with known fields are dropped).
func (m Metadata) MarshalJSON() ([]byte, error) {
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
