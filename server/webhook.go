package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Webhook delivery: a run created with a webhook has its Run object,
// with the thread's final values (or the run's error), POSTed there once
// it ends. Failed deliveries (a network error, 429 or a 5xx) are retried
// WebhookAttempts times in all, with a doubling pause.
var (
	WebhookAttempts = 4
	webhookPause    = time.Second
	webhookTimeout  = 10 * time.Second
)

// checkWebhook refuses a webhook URL that is not http(s) or whose host is
// not allowed: a server that POSTs wherever a request says is a way into
// the network it runs in.
func (a *API) checkWebhook(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("webhook", "%q: want an http or https URL", clipped(raw))
	}
	if u.User != nil {
		return invalid("webhook", "put no credentials in the webhook URL")
	}
	host := strings.ToLower(u.Hostname())
	for _, allowed := range a.cfg.WebhookHosts {
		allowed = strings.ToLower(allowed)
		if allowed == host || strings.HasPrefix(allowed, "*.") && strings.HasSuffix(host, allowed[1:]) {
			return nil
		}
	}
	if len(a.cfg.WebhookHosts) == 0 {
		return invalid("webhook", "this server sends no webhooks: its webhook hosts are not configured")
	}
	return invalid("webhook", "host %q is not one this server may call; allowed: %s", host, strings.Join(a.cfg.WebhookHosts, ", "))
}

// deliverWebhook waits for the run to end, then POSTs its Run object and
// the thread's values (or its error) to hook.
func (a *API) deliverWebhook(thread string, run *apiRun, hook string) {
	ctx, cancel := a.untilClosed()
	defer cancel()
	select {
	case <-run.started:
	case <-ctx.Done():
		return
	}
	payload := map[string]any{}
	if run.err == nil {
		err := a.waitRun(ctx, thread, run)
		if obj, oerr := a.runObject(ctx, thread, run.id); oerr == nil {
			payload = obj
		}
		values, verr := a.finalValues(ctx, thread, run.id, err)
		switch m, _ := values.(map[string]any); {
		case verr != nil:
			// The receiver is another party: the server's own failure is
			// logged here, not sent there.
			a.log.Error("api: webhook values", "run", run.id, "error", verr)
			payload["error"] = "the server could not read the run's final values"
		case m["__error__"] != nil:
			payload["error"] = m["__error__"]
		default:
			payload["values"] = values
		}
	} else {
		payload = run.pendingJSON(thread)
		payload["status"], payload["error"] = "error", "the run did not start"
		if errors.Is(run.err, errCancelledQueued) {
			payload["status"], payload["error"] = "interrupted", run.err.Error()
		}
	}
	payload["webhook_sent_at"] = time.Now().UTC().Format(time.RFC3339Nano)
	body, err := json.Marshal(payload)
	if err != nil {
		a.log.Error("api: webhook payload", "run", run.id, "error", err)
		return
	}
	client := &http.Client{Timeout: webhookTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	pause := webhookPause
	for attempt := 1; ; attempt++ {
		err := post(ctx, client, hook, body)
		if err == nil {
			return
		}
		if attempt >= WebhookAttempts || ctx.Err() != nil {
			a.log.Error("api: webhook not delivered", "run", run.id, "attempts", attempt, "error", err)
			return
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return
		}
		pause *= 2
	}
}

// post sends one delivery; a 4xx other than 429 is final (retrying will
// not change the receiver's mind), so it counts as delivered.
func post(ctx context.Context, client *http.Client, hook string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 {
		return fmt.Errorf("the webhook answered %s", res.Status)
	}
	return nil
}
