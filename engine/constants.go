package engine

import "github.com/superstep-dev/superstep/checkpoints"

// Reserved names, as upstream LangGraph spells them so that checkpoints,
// streams and the Studio speak the same language.
const (
	// Start is the graph's entry node; its channel receives the input.
	Start = "__start__"
	// End is the graph's exit; routing to it ends a branch.
	End = "__end__"

	inputTask     = "__input__"
	interruptKey  = checkpoints.InterruptChannel
	resumeKey     = checkpoints.ResumeChannel
	errorKey      = checkpoints.ErrorChannel
	noWritesKey   = "__no_writes__"
	tasksChannel  = checkpoints.TasksChannel
	pushKind      = "__pregel_push"
	pullKind      = "__pregel_pull"
	branchPrefix  = "branch:to:"
	joinPrefix    = "join:"
	nullTaskID    = "00000000-0000-0000-0000-000000000000"
	cacheNSWrites = "__pregel_ns_writes"
	tagHidden     = "langsmith:hidden"
)

// reservedWrite reports whether a write to channel is bookkeeping that
// apply never hands to a channel.
func reservedWrite(channel string) bool {
	switch channel {
	case noWritesKey, pushKind, resumeKey, interruptKey, errorKey, "__return__", "__error_source_node__":
		return true
	}
	return false
}

// Channel kinds by what an unwritten step does to them (Pregel.volKind).
const (
	volClears  = 1
	volUnknown = 2
)
