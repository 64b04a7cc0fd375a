package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// StateFile is the file, in the run directory, that holds what a run has
// done so far; it is rewritten after every stage, draft and task, and read
// back by a resumed run.
const StateFile = "state.json"

// stateVersion is the format of StateFile.
const stateVersion = 1

// state is what a run has done so far.
type state struct {
	Version   int       `json:"version"`
	StartedAt time.Time `json:"started_at"`
	Cases     []string  `json:"cases"`
	Parts     []string  `json:"parts"`
	Model     string    `json:"model"`
	Provider  string    `json:"provider"`
	// Usage is the org's token use when the run first started, for the
	// run's total.
	UsageAtStart *usageTotals          `json:"usage_at_start,omitempty"`
	Spec         map[string]*caseState `json:"spec"`
	Content      *contentState         `json:"content,omitempty"`
	Assistant    *assistantState       `json:"assistant,omitempty"`

	mu   sync.Mutex
	path string
}

type usageTotals struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// caseState is one case's specification run.
type caseState struct {
	SessionID string        `json:"session_id,omitempty"`
	RepoID    string        `json:"repo_id,omitempty"`
	Stages    []stageResult `json:"stages"`
	Done      bool          `json:"done"`
	Error     string        `json:"error,omitempty"`
}

// stageResult is one finished stage of a case: what the API returned of its
// artifact and what the harness measured.
type stageResult struct {
	Stage  string `json:"stage"`
	Status string `json:"status"`
	// DurationMS is the time from the generate call until the session
	// was ready, measured by the harness; nil when the stage was finished
	// before an interruption (then the artifact's own duration, if any).
	DurationMS       *int64          `json:"duration_ms"`
	PromptTokens     *int64          `json:"prompt_tokens"`
	CompletionTokens *int64          `json:"completion_tokens"`
	TokensSource     string          `json:"tokens_source,omitempty"`
	PromptVersion    string          `json:"prompt_version,omitempty"`
	Model            string          `json:"model,omitempty"`
	Version          int             `json:"version"`
	Generation       *Generation     `json:"generation,omitempty"`
	Checks           []string        `json:"checks"`
	Data             json.RawMessage `json:"data,omitempty"`
	Content          string          `json:"content,omitempty"`
	Error            string          `json:"error,omitempty"`
	Judge            *JudgeScore     `json:"judge,omitempty"`
	// Generated says the harness asked for this stage in this run (false
	// when a resumed run found it already generated).
	Generated bool `json:"generated"`
}

// contentState is the content part's progress.
type contentState struct {
	Drafts []draftResult `json:"drafts"`
	Done   bool          `json:"done"`
	Error  string        `json:"error,omitempty"`
}

// draftResult is one brief's generated draft.
type draftResult struct {
	Brief       string   `json:"brief"`
	BriefID     string   `json:"brief_id,omitempty"`
	ContentID   string   `json:"content_id,omitempty"`
	Status      string   `json:"status"`
	Checks      []string `json:"checks"`
	BannedWords []string `json:"banned_words"`
	Words       int      `json:"words"`
	DurationMS  *int64   `json:"duration_ms"`
	Error       string   `json:"error,omitempty"`
}

// assistantState is the assistant part's progress.
type assistantState struct {
	Tasks []taskRun `json:"tasks"`
	Done  bool      `json:"done"`
	Error string    `json:"error,omitempty"`
}

// taskRun is one finished assistant task.
type taskRun struct {
	Result     TaskResult `json:"result"`
	Transcript Transcript `json:"transcript"`
	Error      string     `json:"error,omitempty"`
}

// loadState reads dir's state file; fs.ErrNotExist when there is none.
func loadState(dir string) (*state, error) {
	p := filepath.Join(dir, StateFile)
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("%s: format %d, this devpilot reads %d", p, s.Version, stateVersion)
	}
	if s.Spec == nil {
		s.Spec = map[string]*caseState{}
	}
	s.path = p
	return &s, nil
}

// save writes the state atomically (a new file renamed over the old).
// Callers hold s.mu.
func (s *state) save() error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// update changes the state under its lock and saves it.
func (s *state) update(f func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	return s.save()
}

// prepareDir makes the run directory, or checks that an existing one may be
// used: a file is refused, and so is a directory holding a run unless
// resuming (and resuming needs one).
func prepareDir(dir string, resume bool) (*state, error) {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return nil, usageErrorf("--out %s is a file, not a directory: choose a directory for the run", dir)
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		if resume {
			return nil, usageErrorf("--resume: %s does not exist; give the directory of the interrupted run", dir)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("cannot create the run directory: %w", err)
		}
	default:
		return nil, fmt.Errorf("the run directory: %w", err)
	}
	st, err := loadState(dir)
	switch {
	case err == nil && !resume:
		return nil, usageErrorf("%s holds a run already (%s): resume it with --resume, or choose another --out", dir, StateFile)
	case err == nil:
		return st, nil
	case errors.Is(err, fs.ErrNotExist) && resume:
		return nil, usageErrorf("--resume: %s holds no run (no %s)", dir, StateFile)
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	default:
		return nil, err
	}
}
