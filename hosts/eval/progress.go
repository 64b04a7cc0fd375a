package eval

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// progress draws the run's progress on a writer: one line redrawn with \r
// on a terminal, a plain line per finished step otherwise.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	total int
	done  int
	start time.Time
	jobs  map[string]string
	width int
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now(), jobs: map[string]string{}}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// working says what a job (a case, the content part…) is doing now.
func (p *progress) working(job, what string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jobs[job] = what
	if p.tty {
		p.draw("")
	}
}

// advance counts n finished steps; note, when set, says what finished.
func (p *progress) advance(n int, note string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = min(p.done+n, p.total)
	if note != "" {
		job, _, _ := strings.Cut(note, ":")
		delete(p.jobs, job)
	}
	if p.tty || note != "" {
		p.draw(note)
	}
}

func (p *progress) draw(note string) {
	const barWidth = 24
	filled := 0
	if p.total > 0 {
		filled = p.done * barWidth / p.total
	}
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", barWidth-filled)
	head := fmt.Sprintf("[%s] %d/%d %s", bar, p.done, p.total, time.Since(p.start).Round(time.Second))
	if !p.tty {
		fmt.Fprintf(p.w, "%s %s\n", head, note)
		return
	}
	jobs := make([]string, 0, len(p.jobs))
	for j, w := range p.jobs {
		jobs = append(jobs, j+": "+w)
	}
	sort.Strings(jobs)
	line := head + " " + strings.Join(jobs, ", ")
	if len(line) > 120 {
		line = line[:119] + "…"
	}
	pad := ""
	if n := p.width - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

// finish ends the bar's line on a terminal.
func (p *progress) finish() {
	if p == nil || p.w == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw("")
	fmt.Fprintln(p.w)
}
