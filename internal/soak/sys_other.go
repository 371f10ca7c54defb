//go:build !unix

package main

import "time"

// raiseFileLimit does nothing where there is no RLIMIT_NOFILE.
func raiseFileLimit() (soft, hard uint64, err error) { return 0, 0, nil }

func maxRSS() (int64, bool) { return 0, false }

func selfCPU() (time.Duration, bool) { return 0, false }
