package matrixcmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// Fail prints err on stderr as one line, without control characters, and
// returns the exit status for it: 2 for flags that cannot work, else 1.
func Fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "matrix:", textsafe.Line(strings.TrimPrefix(err.Error(), "matrix: ")))
	if _, ok := errors.AsType[Usage](err); ok {
		return 2
	}
	return 1
}

// Finish writes the report of res and says how the run ended: saved is
// whether the run saved its results, onDisk whether the results file
// holds them.
func Finish(o *Options, res *matrix.Results, err error, saved, onDisk bool, stdout, stderr io.Writer) int {
	if res != nil {
		if werr := cli.WriteOutput(o.Out, stdout, func(w io.Writer) error { return report.Write(w, o.Format, res) }); werr != nil {
			return Fail(stderr, werr)
		}
	}
	if saved {
		fmt.Fprintf(stderr, "results saved to %s\n", o.Results)
	}
	switch {
	case err != nil && res != nil && !res.Complete && onDisk:
		Fail(stderr, err)
		fmt.Fprintf(stderr, "matrix: finish it with: go run ./examples/matrix -resume %s\n", o.Results)
	case err != nil:
		Fail(stderr, err)
		if !onDisk {
			fmt.Fprintln(stderr, "matrix: nothing was saved")
		}
	case res.Measured() != nil:
		return Fail(stderr, fmt.Errorf("%w: see the notes above", res.Measured()))
	default:
		return 0
	}
	return 1
}
