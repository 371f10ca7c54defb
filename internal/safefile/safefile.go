// Package safefile opens the files llmload's commands read and write so
// that none of them can hang a command or destroy what it should not. An
// input must be a regular file, and is opened without blocking: a named
// pipe with no writer would block open(2), out of reach of SIGTERM. An
// output is never a symbolic link, a named pipe or a device (each is
// refused and left as it is), replaces an existing file only when asked,
// and a report is written whole or not at all: into a temporary file
// beside it, renamed into place.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A NotRegularError is a path that names something other than a regular
// file: a symbolic link (as an output), a named pipe, a directory, a
// device. It is refused, and left as it is.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file: it is left as it is; give a regular file", e.Path, Kind(e.Mode))
}

// An ExistsError is an output path that holds a file already: it is
// replaced only when asked.
type ExistsError struct {
	Path    string
	ModTime time.Time
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already exists (written %s)", e.Path, e.ModTime.Format(time.DateTime))
}

// Kind names the kind of a file that is not a regular one: "symbolic
// link", "named pipe", "directory", "socket", "device".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// Open opens the regular file at path for reading. It never blocks: the
// file is opened non-blocking and anything but a regular file (a named
// pipe, a directory, a device) is refused with a [*NotRegularError]. A
// symbolic link is followed: an input is only read.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	return regular(f, path)
}

// OpenIn opens the file name under root for reading, as [Open] does.
func OpenIn(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	return regular(f, name)
}

// regular returns f when it is a regular file, else closes it.
func regular(f *os.File, path string) (*os.File, error) {
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CheckOutput refuses an output path before anything is written to it:
// one that names anything but a regular file (a symbolic link is not
// followed), a [*NotRegularError]; and, unless replace, an existing file,
// an [*ExistsError]. A path where nothing is yet is fine.
func CheckOutput(path string, replace bool) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	case !replace:
		return &ExistsError{Path: path, ModTime: fi.ModTime()}
	}
	return nil
}

// Create creates the file at path for writing as a run goes, refusing
// what [CheckOutput] refuses: an existing file is emptied only when
// replace, and only once it is known to be a regular file. It never
// follows a symbolic link nor blocks on a named pipe, whatever is put at
// path between the check and the open.
func Create(path string, replace bool) (*os.File, error) {
	flag := os.O_CREATE
	if !replace {
		flag |= os.O_EXCL
	}
	f, err := openOutput(path, flag, replace)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Append opens the file at path to add to it, creating it if need be,
// refusing anything but a regular file as [Create] does.
func Append(path string) (*os.File, error) {
	return openOutput(path, os.O_CREATE|os.O_APPEND, true)
}

// openOutput opens path write-only with flag, as Create and Append do.
func openOutput(path string, flag int, replace bool) (*os.File, error) {
	if err := CheckOutput(path, replace); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|flag|nonBlock|noFollow, 0o644)
	if err != nil {
		// Something was put at path since the check: say what.
		if cerr := CheckOutput(path, replace); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	return regular(f, path)
}

// Write writes the file at path whole or not at all: write writes into a
// temporary file beside it, which is synced, closed and renamed over path
// once write returns nil, so a crash, a full disk or an error part way
// never leaves a cut-off file where the earlier one was. The temporary
// file is removed on any failure. A path that names anything but a
// regular file is refused with a [*NotRegularError] and left as it is;
// an existing regular file is replaced, keeping its permissions.
func Write(path string, write func(io.Writer) error) error {
	if err := CheckOutput(path, true); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return &fs.PathError{Op: "create", Path: path, Err: pe.Err} // the path given, not the temporary one
	}
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
