package cveagent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/superstep-dev/superstep/examples/cveassessment"
	"github.com/superstep-dev/superstep/models/localprovider"
)

// Respond drives this example's conversation on the offline model
// (localprovider.Config.Respond; modelenv.Config.Respond): for a request
// that offers the agent's tools it plays the analyst a real model would,
// one step per request, read from the conversation so far:
//
//  1. fetch_cve and fetch_cvss for the CVE id in the user's message, in
//     one reply (two parallel tool calls);
//  2. fetch_vendor_statement when fetch_cvss names a vendor;
//  3. score_cvss on the vendor's vector if there is one (it knows the
//     product's defaults), else the database's;
//  4. a summary of the record and the score, streamed word by word.
//
// A failed fetch ends the loop with a reply saying what failed. Every
// text starts with localprovider.OfflineLabel. Requests that do not
// offer the tools are declined (false), left to the double's default
// offline answers.
func Respond(r localprovider.Request) (localprovider.Turn, bool) {
	c, ok := readConversation(r)
	if !ok || !c.tools[ToolFetchCVE] || !c.tools[ToolFetchCVSS] || !c.tools[ToolScoreCVSS] {
		return localprovider.Turn{}, false
	}
	return c.next(), true
}

var cveInText = regexp.MustCompile(`CVE-\d{4}-\d{4,}`)

// conversation is what Respond reads of a request, whichever API.
type conversation struct {
	tools map[string]bool
	user  string // the last user text
	// results holds each tool's last result by tool name, and failed
	// whether it was an error.
	results map[string]string
	failed  map[string]bool
}

func readConversation(r localprovider.Request) (conversation, bool) {
	c := conversation{tools: map[string]bool{}, results: map[string]string{}, failed: map[string]bool{}}
	names := map[string]string{} // tool call id → tool name
	switch {
	case r.Anthropic != nil:
		for _, t := range r.Anthropic.Tools {
			c.tools[t.Name] = true
		}
		for _, m := range r.Anthropic.Messages {
			for _, b := range m.Content {
				switch b.Type {
				case "text":
					if m.Role == "user" {
						c.user = b.Text
					}
				case "tool_use":
					names[b.ID] = b.Name
				case "tool_result":
					name := names[b.ToolUseID]
					c.results[name], c.failed[name] = b.ResultText(), b.IsError
				}
			}
		}
	case r.OpenAI != nil:
		for _, t := range r.OpenAI.Tools {
			c.tools[t.Function.Name] = true
		}
		for _, m := range r.OpenAI.Messages {
			switch m.Role {
			case "user":
				c.user = m.Text()
			case "assistant":
				for _, tc := range m.ToolCalls {
					names[tc.ID] = tc.Function.Name
				}
			case "tool":
				name := names[m.ToolCallID]
				c.results[name] = m.Text()
				c.failed[name] = strings.HasPrefix(m.Text(), "Error")
			}
		}
	default:
		return c, false
	}
	return c, true
}

// next is the analyst's next step.
func (c conversation) next() localprovider.Turn {
	id := cveInText.FindString(c.user)
	if id == "" {
		return say("Which CVE should I assess? Give its id, such as CVE-2021-44228.")
	}
	cveText, haveCVE := c.results[ToolFetchCVE]
	cvssText, haveCVSS := c.results[ToolFetchCVSS]
	if !haveCVE || !haveCVSS {
		idArgs := args(map[string]string{"cve_id": id})
		return localprovider.Turn{
			Text: fmt.Sprintf("%s I'll fetch %s's record and its CVSS data.", localprovider.OfflineLabel, id),
			ToolCalls: []localprovider.ToolCall{
				{Name: ToolFetchCVE, Args: idArgs},
				{Name: ToolFetchCVSS, Args: idArgs},
			},
		}
	}
	var rec cveassessment.CVERecord
	var cvss cveassessment.CVSSRecord
	if c.failed[ToolFetchCVE] || json.Unmarshal([]byte(cveText), &rec) != nil {
		return say(fmt.Sprintf("I could not fetch %s's record: %s", id, cveText))
	}
	if c.failed[ToolFetchCVSS] || json.Unmarshal([]byte(cvssText), &cvss) != nil {
		return say(fmt.Sprintf("I could not fetch %s's CVSS data: %s", id, cvssText))
	}
	vector, source := cvss.Vector, cvss.Source
	if cvss.Vendor != "" && c.tools[ToolFetchVendor] {
		text, ok := c.results[ToolFetchVendor]
		if !ok {
			return localprovider.Turn{
				Text:      fmt.Sprintf("%s %s published its own statement; I'll read it.", localprovider.OfflineLabel, cvss.Vendor),
				ToolCalls: []localprovider.ToolCall{{Name: ToolFetchVendor, Args: args(map[string]string{"vendor": cvss.Vendor, "cve_id": id})}},
			}
		}
		var vs cveassessment.VendorStatement
		if !c.failed[ToolFetchVendor] && json.Unmarshal([]byte(text), &vs) == nil && vs.Vector != "" {
			vector, source = vs.Vector, vs.Vendor
		}
	}
	scoreText, scored := c.results[ToolScoreCVSS]
	if !scored {
		return localprovider.Turn{
			Text:      fmt.Sprintf("%s Scoring the %s vector.", localprovider.OfflineLabel, source),
			ToolCalls: []localprovider.ToolCall{{Name: ToolScoreCVSS, Args: args(map[string]string{"vector": vector})}},
		}
	}
	var s Score
	if c.failed[ToolScoreCVSS] || json.Unmarshal([]byte(scoreText), &s) != nil {
		return say(fmt.Sprintf("I could not score the vector %s: %s", vector, scoreText))
	}
	return say(fmt.Sprintf("%s (%s): %s The %s vector %s scores %.1f, severity %s.",
		id, rec.CWE, rec.Description, source, s.Vector, s.BaseScore, s.Severity))
}

// say is a final reply, streamed word by word.
func say(text string) localprovider.Turn {
	return localprovider.Turn{Chunks: strings.SplitAfter(localprovider.OfflineLabel+" "+text, " ")}
}

func args(v map[string]string) string {
	b, _ := json.Marshal(v)
	return string(b)
}
