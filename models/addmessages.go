package models

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/engine"
)

func init() {
	engine.RegisterReducer("add_messages", AddMessages)
}

// MessagesState is the state of a chat graph, upstream's MessagesState:
// one key, "messages", folded with AddMessages. Embed it, or copy its
// field into a state struct of your own.
type MessagesState struct {
	Messages []Message `json:"messages" reduce:"add_messages"`
}

// AddMessages is upstream's add_messages reducer. Both sides may be a
// message, a list, a string (a human message), a dict in LangChain's or
// OpenAI's role form, or a list mixing them (see ToMessages). It returns
// a new []Message:
//
//   - chunks become messages (ToMessage), and a message without an id on
//     either side gets a uuid v4;
//   - if right holds RemoveAll markers, the result is what follows the
//     last one;
//   - otherwise a message of right whose id is in left replaces it in
//     place, a RemoveMessage deletes it (an unknown id is an error that
//     names it), and a new message is appended.
//
// Neither argument is modified. Its signature is a channels.Reducer; the
// "add_messages" reduce tag names it.
func AddMessages(current, next any) (any, error) {
	if current == nil || next == nil {
		side := "right"
		if current == nil {
			side = "left"
		}
		if current == nil && next == nil {
			side = "left and right"
		}
		return nil, fmt.Errorf("%w: add_messages needs both left and right; %s is nil", ErrInvalidMessage, side)
	}
	left, err := ToMessages(current)
	if err != nil {
		return nil, fmt.Errorf("add_messages: left: %w", err)
	}
	right, err := ToMessages(next)
	if err != nil {
		return nil, fmt.Errorf("add_messages: right: %w", err)
	}
	for i := range left {
		left[i] = ToMessage(left[i])
		if left[i].ID == "" {
			left[i].ID = uuid.NewString()
		}
	}
	removeAll := -1
	for i := range right {
		right[i] = ToMessage(right[i])
		if right[i].ID == "" {
			right[i].ID = uuid.NewString()
		}
		if right[i].Type == TypeRemove && right[i].ID == RemoveAllID {
			removeAll = i
		}
	}
	if removeAll >= 0 {
		return append([]Message{}, right[removeAll+1:]...), nil
	}
	merged := left
	byID := make(map[string]int, len(merged)+len(right))
	for i, m := range merged {
		byID[m.ID] = i
	}
	var remove map[string]bool
	for _, m := range right {
		if i, ok := byID[m.ID]; ok {
			if m.Type == TypeRemove {
				if remove == nil {
					remove = map[string]bool{}
				}
				remove[m.ID] = true
			} else {
				delete(remove, m.ID)
				merged[i] = m
			}
			continue
		}
		if m.Type == TypeRemove {
			return nil, fmt.Errorf("%w: attempting to delete a message with an ID that doesn't exist (%q)", ErrUnknownMessageID, m.ID)
		}
		byID[m.ID] = len(merged)
		merged = append(merged, m)
	}
	if len(remove) == 0 {
		return merged, nil
	}
	kept := merged[:0]
	for _, m := range merged {
		if !remove[m.ID] {
			kept = append(kept, m)
		}
	}
	return kept, nil
}
