package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The harness reads a page that a script changes after load: the browser
// really runs JavaScript, and Class sees what the script did.
func TestBrowserRunsScripts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!DOCTYPE html><svg><g id="n-a" class="gnode"></g></svg>
<script>setTimeout(() => document.getElementById("n-a").classList.add("done"), 50)</script>`))
	}))
	defer srv.Close()
	ctx := Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitReady(chromedp.CSS("g#n-a.done"))); err != nil {
		t.Fatal(err)
	}
	cls, err := Class(ctx, "n-a")
	if err != nil || cls != "gnode done" {
		t.Fatalf("class = %q, %v", cls, err)
	}
	path := filepath.Join(t.TempDir(), "shot.png")
	if err := Screenshot(ctx, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Fatalf("screenshot is not a PNG (%d bytes, %v)", len(b), err)
	}
}

// Without the browser a test skips locally and fails under CI; checked by
// re-running this test in a child process (a skip or failure ends the test
// that hits it), where it looks for a browser that does not exist.
func TestMissingBrowserFailsUnderCI(t *testing.T) {
	if os.Getenv("E2E_CHILD") != "" {
		browser(t, filepath.Join(t.TempDir(), "no-chromium"), os.Getenv)
		return
	}
	t.Parallel()
	for _, tc := range []struct {
		ci       string
		wantFail bool
		wantText string
	}{
		{ci: "", wantFail: false, wantText: "is missing; run scripts/dev-browser"},
		{ci: "true", wantFail: true, wantText: "CI must run the browser tests"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissingBrowserFailsUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "E2E_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v:\n%s", tc.ci, failed, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.wantText) {
			t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, tc.wantText, out)
		}
	}
}
