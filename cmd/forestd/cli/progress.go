package cli

import (
	"fmt"
	"github.com/schollz/progressbar/v3"
	"sync"
	"time"

	"github.com/forestd/forestd/arrowforest/dependence"
)

// progressMode is --progress of analyze and select (issue 30): a search's
// progress reaches stderr whether or not it is a terminal.
type progressMode int

const (
	progressAuto   progressMode = iota // a bar on a terminal, else lines once the search has run ProgressEvery
	progressAlways                     // lines also at each stage's start and at the end, however short the run
	progressNever                      // nothing
)

func parseProgress(s string) (progressMode, error) {
	switch s {
	case "auto":
		return progressAuto, nil
	case "always":
		return progressAlways, nil
	case "never":
		return progressNever, nil
	}
	return 0, fmt.Errorf("want auto, always or never, got %q", s)
}

// defaultProgressEvery is the interval of progress lines (Env.ProgressEvery).
const defaultProgressEvery = 5 * time.Second

// searchLines is a search's progress as lines on stderr for a log, not a
// terminal: every Env.ProgressEvery (after a test, or from a ticker while
// a long test runs) a line with the stage, the tests done
// of the most still to do, the time so far and an ETA from the stage's
// rate ("progress: sets tests 120/713, 4.0 s, ETA 19 s"); with always also
// a line when a stage starts and one at the end. It returns the search's
// callback and the function that stops the lines (and writes the last).
func searchLines(env Env, always bool) (func(dependence.SearchProgress), func()) {
	every := env.ProgressEvery
	if every <= 0 {
		every = defaultProgressEvery
	}
	var mu sync.Mutex
	start := time.Now()
	var cur dependence.SearchProgress
	var stageStart time.Time
	last := start                 // the last line
	line := func(now time.Time) { // under mu
		last = now
		if cur.Stage == "" {
			fmt.Fprintf(env.Stderr, "progress: starting, %.1f s\n", now.Sub(start).Seconds())
			return
		}
		eta := "ETA unknown"
		if cur.Done > 0 && cur.Total >= cur.Done {
			rate := now.Sub(stageStart).Seconds() / float64(cur.Done)
			eta = fmt.Sprintf("ETA %.0f s", rate*float64(cur.Total-cur.Done))
		}
		fmt.Fprintf(env.Stderr, "progress: %s tests %d/%d, %.1f s, %s\n", cur.Stage, cur.Done, cur.Total, now.Sub(start).Seconds(), eta)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				mu.Lock()
				if now.Sub(last) >= every {
					line(now)
				}
				mu.Unlock()
			}
		}
	}()
	progress := func(p dependence.SearchProgress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Stage != cur.Stage {
			stageStart = time.Now()
			if always {
				fmt.Fprintf(env.Stderr, "progress: %s tests start, %.1f s\n", p.Stage, stageStart.Sub(start).Seconds())
			}
		}
		cur = p
		if now := time.Now(); now.Sub(last) >= every {
			line(now)
		}
	}
	var once sync.Once
	return progress, func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			if always {
				mu.Lock()
				fmt.Fprintf(env.Stderr, "progress: done, %d %s tests, %.1f s\n", cur.Done, cur.Stage, time.Since(start).Seconds())
				mu.Unlock()
			}
		})
	}
}

// newBar is a progress bar on stderr for a terminal: count and ETA,
// cleared when finished, redrawn at most once per throttle.
func newBar(env Env, max int64, desc string, throttle time.Duration) *progressbar.ProgressBar {
	return progressbar.NewOptions64(max, progressbar.OptionSetWriter(env.Stderr), progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(throttle))
}
