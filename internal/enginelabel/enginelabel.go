// Package enginelabel names an inference server's engine and version the
// way every report writes them.
package enginelabel

import "strings"

// Of names engine and version as every report does ("vllm 0.10.1"): the
// engine alone when its version is not known, and "" when neither is.
func Of(engine, version string) string {
	return strings.TrimSpace(engine + " " + strings.TrimSpace(version))
}
