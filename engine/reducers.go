package engine

import (
	"fmt"
	"sync"

	"github.com/superstep-dev/superstep/engine/channels"
)

// Named reducers for the `reduce:"<name>"` struct tag. "append" and "add"
// are built in; a package that defines a state type's reducer (models'
// "add_messages") registers it from an init function, so a state struct
// that uses its types can name it in a tag.
var (
	reducersMu sync.RWMutex
	reducers   = map[string]channels.Reducer{
		"append": channels.AppendReducer,
		"add":    channels.AddReducer,
	}
)

// RegisterReducer makes name usable in a state field's `reduce:"name"`
// tag. It panics when name is empty, r is nil or name is taken: two
// packages claiming one name is a programming error, found at start-up.
func RegisterReducer(name string, r channels.Reducer) {
	if name == "" || r == nil {
		panic("engine: RegisterReducer needs a name and a reducer")
	}
	reducersMu.Lock()
	defer reducersMu.Unlock()
	if _, taken := reducers[name]; taken {
		panic(fmt.Sprintf("engine: reducer %q is already registered", name))
	}
	reducers[name] = r
}

func namedReducer(name string) (channels.Reducer, bool) {
	reducersMu.RLock()
	defer reducersMu.RUnlock()
	r, ok := reducers[name]
	return r, ok
}
