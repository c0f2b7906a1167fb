package pgevents

import "strings"

// SQLChannelOf selects the channel of the schema given as $1.
var SQLChannelOf = "SELECT " + strings.ReplaceAll(sqlChannelOf, "{s}", "$1::text")
