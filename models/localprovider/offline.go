package localprovider

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// OfflineLabel starts every reply of the offline model, so a page showing
// its output shows it is not a real model's.
const OfflineLabel = "[offline model]"

// offlineTurn is the double's answer when nothing is scripted: a
// deterministic, obviously fake but useful reply.
//
//   - The conversation ends with tool results: it reports what they said.
//   - A tool is offered and the last user message names it: it calls that
//     tool (the first one named, in the request's order) with arguments
//     derived from the message and the tool's schema.
//   - Otherwise it echoes the last user message with a word count.
func offlineTurn(x exchange) Turn {
	if len(x.toolResults) > 0 {
		return Turn{Chunks: words(fmt.Sprintf("%s The tool returned: %s", OfflineLabel, clip(strings.Join(x.toolResults, "; "), 400)))}
	}
	lower := strings.ToLower(x.lastUser)
	for _, t := range x.tools {
		if t.name == "" || !mentions(lower, strings.ToLower(t.name)) {
			continue
		}
		args, _ := json.Marshal(offlineArgs(x.lastUser, t))
		return Turn{
			Text:      fmt.Sprintf("%s Calling %s.", OfflineLabel, t.name),
			ToolCalls: []ToolCall{{Name: t.name, Args: string(args)}},
		}
	}
	n := len(strings.Fields(x.lastUser))
	return Turn{Chunks: words(fmt.Sprintf("%s No model is configured, so this reply is canned. You wrote %d words: %q", OfflineLabel, n, clip(x.lastUser, 200)))}
}

// mentions reports whether name occurs in text as a whole word.
func mentions(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isWordByte(text[start-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		i = start + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

var (
	quotedRe = regexp.MustCompile(`"([^"]*)"`)
	numberRe = regexp.MustCompile(`-?\d+(\.\d+)?`)
)

// offlineArgs derives a tool's arguments from the message: each required
// property (every property when none is required) gets a string from the
// first quoted text, else the text after the tool's name; a number from the
// first number in the message; booleans false, arrays and objects empty; an
// enum its first value.
func offlineArgs(msg string, t offeredTool) map[string]any {
	var schema struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(t.schema, &schema)
	names := schema.Required
	if len(names) == 0 {
		for name := range schema.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	text := msg
	if m := quotedRe.FindStringSubmatch(msg); m != nil {
		text = m[1]
	} else if i := strings.Index(strings.ToLower(msg), strings.ToLower(t.name)); i >= 0 {
		if rest := strings.TrimSpace(strings.Trim(msg[i+len(t.name):], " :,.?!")); rest != "" {
			text = rest
		}
	}
	args := map[string]any{}
	for _, name := range names {
		prop := schema.Properties[name]
		typ, _ := prop.Type.(string)
		switch {
		case len(prop.Enum) > 0:
			args[name] = prop.Enum[0]
		case typ == "integer" || typ == "number":
			var v any = 0
			if m := numberRe.FindString(msg); m != "" {
				if f, err := strconv.ParseFloat(m, 64); err == nil {
					v = f
					if typ == "integer" {
						v = int(f)
					}
				}
			}
			args[name] = v
		case typ == "boolean":
			args[name] = false
		case typ == "array":
			args[name] = []any{}
		case typ == "object":
			args[name] = map[string]any{}
		default:
			args[name] = text
		}
	}
	return args
}

// words splits text into word-sized stream chunks (each keeps its
// following space), so offline replies stream token by token.
func words(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
