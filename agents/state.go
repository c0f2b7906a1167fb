package agents

import (
	"fmt"
	"reflect"
	"strings"

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
