package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's chromium (/usr/bin/chromium, installed
// by make test through e2e/deps.sh) headlessly with chromedp. Chromium runs with the background
// networking, component updates and sync off: this machine's network is
// closed, and the pages under test load nothing from it.

const chromiumPath = "/usr/bin/chromium"

func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium is required for the browser tests (apt-get install chromium; make test installs it): %v", err)
	}
}

// browser is a headless chromium tab with what its pages reported:
// console errors, uncaught exceptions and JavaScript dialogs (alert).
type browser struct {
	ctx     context.Context
	mu      sync.Mutex
	errors  []string
	dialogs []string
}

// newBrowser starts chromium with a fresh profile; it is closed in
// t.Cleanup.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	needChromium(t)
	// The profile directory is removed after Chromium has exited, with a
	// few tries: t.TempDir's cleanup ran while Chromium's processes were
	// still writing into it ("directory not empty"), failing a passed test.
	profile, err := os.MkdirTemp("", "forestd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1400, 1700),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx) // closes the browser and waits for it
		cancel()
		acancel()
		for try := 0; ; try++ {
			err := os.RemoveAll(profile)
			if err == nil {
				return
			}
			if try == 50 {
				t.Errorf("removing the Chromium profile: %v", err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// the first Run starts the browser and ties it to ctx (a derived,
	// cancelled context would close it)
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	b := &browser{ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			b.dialogs = append(b.dialogs, string(e.Type)+": "+e.Message)
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) //nolint:errcheck // dismiss it so the page goes on
		case *runtime.EventExceptionThrown:
			b.errors = append(b.errors, "exception: "+e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value))
				}
				b.errors = append(b.errors, "console.error: "+strings.Join(parts, " "))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError {
				b.errors = append(b.errors, fmt.Sprintf("log %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		}
	})
	b.run(t, 60*time.Second, log.Enable(), runtime.Enable())
	return b
}

// run runs actions with a timeout.
func (b *browser) run(t *testing.T, d time.Duration, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression into out.
func (b *browser) eval(t *testing.T, expr string, out any) {
	t.Helper()
	b.run(t, 10*time.Second, chromedp.Evaluate(expr, out))
}

// problems returns the console errors, exceptions and dialogs so far.
func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append(append([]string(nil), b.errors...), b.dialogs...)
}

func (b *browser) dialogsSeen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// screenshot saves the whole page as PNG under dir (FORESTD_SCREENSHOTS
// when set, else the test's temporary directory) and returns the path.
func (b *browser) screenshot(t *testing.T, name string) string {
	t.Helper()
	var png []byte
	b.run(t, 30*time.Second, chromedp.FullScreenshot(&png, 100))
	dir := os.Getenv("FORESTD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(png))
	return path
}
