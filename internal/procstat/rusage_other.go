//go:build !unix

package procstat

import (
	"errors"
	"fmt"
	"time"
)

// errUnsupported is the error of a figure this platform does not give.
var errUnsupported = fmt.Errorf("procstat: %w on this platform", errors.ErrUnsupported)

func selfCPU() (time.Duration, error) { return 0, errUnsupported }

func selfSystemCPU() (time.Duration, error) { return 0, errUnsupported }

func maxRSS() (int64, error) { return 0, errUnsupported }
