package pgevents

import "strings"

// SQLChannelOf selects the channel of the schema given as $1.
var SQLChannelOf = "SELECT " + strings.NewReplacer("{s}", "$1::text", "{name}", "studio_events").Replace(sqlChannelOf)
