package app

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.uber.org/dig"
)

// StartupError is a start-up failure an operator fixes by changing one
// setting: the data directory cannot be created, the database cannot be
// opened, an address is taken. Its message is one sentence naming what
// failed, the setting and the reason, such as
//
//	cannot create the data directory "data" (DEVPILOT_DATA_DIR): permission denied
//
// The constructors and start hooks of the fx graph return it, so that the
// command line can find it through fx's wrapping (StartupCause) and print
// it alone, never fx's dump of build paths and reflection frames.
type StartupError struct {
	// What is what could not be done: "cannot create the data directory \"data\"".
	What string
	// Setting is the variable to change, such as EnvDataDir.
	Setting string
	// Err is the cause.
	Err error
}

// Error returns "What (Setting): reason", the reason being the cause's
// text without the paths and packages it repeats.
func (e *StartupError) Error() string {
	return e.What + " (" + e.Setting + "): " + reason(e.Err)
}

// Unwrap returns the cause.
func (e *StartupError) Unwrap() error { return e.Err }

// reason is err's text as an operator needs it: an operating system
// error's alone (a path error repeats the path What names), and without the
// adapters' package prefixes.
func reason(err error) string {
	if err == nil {
		return "unknown error"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, syscall.EROFS) {
			return "read-only file system"
		}
		return pe.Err.Error()
	}
	return strings.ReplaceAll(err.Error(), "sqlstore: ", "")
}

// StartupCause returns what to tell an operator of err, a failure to build
// or start the app: the StartupError in its chain, else the root cause fx
// and dig wrapped (the error a constructor or hook returned), without their
// build paths and reflection frames.
func StartupCause(err error) error {
	if err == nil {
		return nil
	}
	if se, ok := errors.AsType[*StartupError](err); ok {
		return se
	}
	return dig.RootCause(err)
}

// PrepareDataDir creates the data directory (0700) when it is missing and
// checks that files can be created in it, before anything is written there
// (the secret key file, the SQLite database, the sandbox's token file).
// Errors: a StartupError naming the directory and EnvDataDir.
func PrepareDataDir(cfg Config) error {
	dir := cfg.DataDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &StartupError{What: fmt.Sprintf("cannot create the data directory %q", dir), Setting: EnvDataDir, Err: err}
	}
	f, err := os.CreateTemp(dir, ".devpilot-write-check-*")
	if err != nil {
		return &StartupError{What: fmt.Sprintf("cannot write in the data directory %q", dir), Setting: EnvDataDir, Err: err}
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return nil
}

// listenError is the StartupError of an address that cannot be listened on:
// "cannot listen on ADDR (SETTING): the address is already in use (…)".
func listenError(addr, setting string, err error) error {
	cause := err
	if errors.Is(err, syscall.EADDRINUSE) {
		cause = errors.New("the address is already in use (another process listens on it; choose another with " + setting + ")")
	} else if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Err != nil {
		cause = oe.Err
	}
	return &StartupError{What: "cannot listen on " + addr, Setting: setting, Err: cause}
}

// UsesDataDir reports whether the process writes in the data directory:
// run (its secret key file and database), the sandbox (its token file),
// and any mode on the default database, a SQLite file in it. Call
// PrepareDataDir first when it does.
func (c Config) UsesDataDir() bool {
	return c.Mode == ModeRun || c.Sandbox || c.DatabaseURL == "sqlite:"+filepath.Join(c.DataDir, "devpilot.db")
}
