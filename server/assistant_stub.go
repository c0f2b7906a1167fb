package server

import (
	"context"
	"slices"
)

// resolveAssistant (temporary until the assistants store lands) resolves
// a graph id only.
func (a *API) resolveAssistantGraph(ctx context.Context, idOrGraph string) (string, string, error) {
	if slices.Contains(a.cfg.Runs.GraphNames(), idOrGraph) {
		return idOrGraph, idOrGraph, nil
	}
	return "", "", notFound("assistant %q not found", idOrGraph)
}
