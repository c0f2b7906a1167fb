// Package e2e drives real headless Chromium from Go tests with chromedp,
// for the Studio's end-to-end tests.
//
// The browser is Debian's chromium at BrowserPath (scripts/dev-browser
// installs it; `make test` runs that first). Like the database tests, a
// test that needs the browser skips when it is missing, except under CI
// (the CI environment variable is set), where it fails: CI must run them.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BrowserPath is where Debian's chromium package puts the browser.
const BrowserPath = "/usr/bin/chromium"

// DefaultTimeout bounds all of one test's browser actions together. The
// handlers package runs a few dozen browser tests in parallel under the
// race detector on two cores, where a long test's whole session passed 30
// s (a node-details test failed in CI at its last step that way); a hang
// is still caught, later.
const DefaultTimeout = 90 * time.Second

// Browser starts a headless Chromium with a fresh profile for tb and
// returns the context of its first tab, with a timeout of DefaultTimeout
// for the actions run on it. The browser is closed at cleanup.
func Browser(tb testing.TB) context.Context {
	tb.Helper()
	return browser(tb, BrowserPath, os.Getenv)
}

func browser(tb testing.TB, path string, getenv func(string) string) context.Context {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		if getenv("CI") != "" {
			tb.Fatalf("e2e: %s is missing, but CI is set: CI must run the browser tests (run scripts/dev-browser, or `make test`)", path)
		}
		tb.Skipf("e2e: %s is missing; run scripts/dev-browser to install it (`make test` does)", path)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests often run as root (in containers)
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(tb.TempDir(), "profile")),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// Start the browser on a context without a timeout: a timeout on the
	// first call would kill the browser when it fires.
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		tb.Fatalf("e2e: start %s: %v", path, err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, DefaultTimeout)
	tb.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	return ctx
}

// Class returns the class attribute of the element with id ("" when it
// has none).
func Class(ctx context.Context, id string) (string, error) {
	r, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID(id), "class"))
	return r.Value, err
}

// Screenshot saves a PNG of the whole page to path when path is not
// empty (quality 100 gives PNG; anything lower would write JPEG).
func Screenshot(ctx context.Context, path string) error {
	if path == "" {
		return nil
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}
