package agents

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/models"
)

// messagesOf finds the messages of a state: a []models.Message, a map
// with a "messages" key, or a struct (or pointer to one) with a field
// whose json name is "messages".
func messagesOf(state any) ([]models.Message, error) {
	switch s := state.(type) {
	case nil:
		return nil, nil
	case []models.Message:
		return s, nil
	case ToolInput:
		return s.Messages, nil
	case map[string]any:
		v, ok := s["messages"]
		if !ok || v == nil {
			return nil, nil
		}
		return models.ToMessages(v)
	}
	v := reflect.ValueOf(state)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("agents: a state of type %T has no messages", state)
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "messages" {
			if msgs, ok := v.Field(i).Interface().([]models.Message); ok {
				return msgs, nil
			}
			return models.ToMessages(v.Field(i).Interface())
		}
		if f.Anonymous && name == "" {
			if msgs, err := messagesOf(v.Field(i).Interface()); err == nil && msgs != nil {
				return msgs, nil
			}
		}
	}
	return nil, fmt.Errorf("agents: a state of type %T has no \"messages\" field", state)
}

// stepBudget is the channel behind the agent's remaining_steps: upstream's
// RemainingSteps managed value (recursion limit minus the supersteps this
// run has taken). The engine asks every channel kind it does not know
// about on every superstep that runs tasks (channels.Channel's contract),
// so counting those calls counts the run's supersteps; it is never
// checkpointed, so each run starts again from the full budget. Its version moves
// every superstep, but no node subscribes to it, so it triggers nothing.
type stepBudget struct {
	limit int
	steps int
}

func (c *stepBudget) Update(values []any) (bool, error) {
	if len(values) > 0 {
		return false, fmt.Errorf("%w: remaining_steps is managed by the agent and cannot be written", channels.ErrInvalidUpdate)
	}
	c.steps++
	return true, nil // a new value: node inputs read it again
}

// Get is the supersteps left after this one before the run's limit: the
// engine counts the input's superstep, and fails at step start+limit+1.
func (c *stepBudget) Get() (any, bool) { return c.limit - 1 - c.steps, c.steps > 0 }

// IsAvailable is false outside a run (GetState), where no budget applies.
func (c *stepBudget) IsAvailable() bool                          { return c.steps > 0 }
func (c *stepBudget) Consume() bool                              { return false }
func (c *stepBudget) Finish() bool                               { return false }
func (c *stepBudget) Checkpoint() (json.RawMessage, bool, error) { return nil, false, nil }
func (c *stepBudget) FromCheckpoint(json.RawMessage) (channels.Channel, error) {
	return &stepBudget{limit: c.limit}, nil
}
func (c *stepBudget) Copy() channels.Channel { cp := *c; return &cp }
