package matrix

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/llmload/llmload/internal/picture"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix/internal/fleet"
)

// measureImages draws the run's pictures (Spec.Images) and asks the
// server what they cost: the prompt tokens of the short prompt with them
// less those without. A server that reports no usage leaves the cost
// unknown, and each prompt's text the whole context, said in a note.
func (cr *cellRun) measureImages(ctx context.Context) error {
	spec := cr.spec
	if len(spec.Images) == 0 {
		return nil
	}
	format, err := picture.ParseFormat(spec.ImageFormat)
	if err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	seed := binary.LittleEndian.Uint64([]byte(cr.runID + "pictures")[:8])
	size := 0
	for i, s := range spec.Images {
		sizes, err := picture.ParseSizes(s)
		if err != nil || len(sizes) != 1 {
			return fmt.Errorf("matrix: Spec.Images[%d] %q: give WIDTHxHEIGHT", i, s)
		}
		u, err := picture.DataURL(sizes[0], format, seed+uint64(i))
		if err != nil {
			return fmt.Errorf("matrix: %w", err)
		}
		size += len(u)
		cr.images = append(cr.images, u)
	}
	if size > fleet.MaxImageBytes {
		return fmt.Errorf("matrix: the pictures of Spec.Images take %d bytes as data URLs, above %d: send fewer or smaller ones, or -image-format jpeg", size, fleet.MaxImageBytes)
	}
	counted := [2]int{}
	for i, images := range [][]string{nil, cr.images} {
		req := &loadgen.Request{API: spec.API, Model: spec.Model, Prompt: shortPrompt, Images: images, MaxTokens: 1, Usage: loadgen.UsageFinal}
		tl, err := cr.sendSizing(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("matrix: a short prompt with the images of Spec.Images failed: %w", err)
		}
		counted[i] = tl.PromptTokens
	}
	if counted[0] > 0 && counted[1] > counted[0] {
		cr.imageTokens = counted[1] - counted[0]
		cr.r.logf("images: %d of %s (%s) a request, %d prompt tokens as the server counts them", len(cr.images), joinSizes(spec.Images), format, cr.imageTokens)
		return nil
	}
	note := fmt.Sprintf("the server reported no prompt tokens for the images (%s): each prompt's text is its whole context, and the images come on top", joinSizes(spec.Images))
	if !slices.Contains(cr.res.Server.Notes, note) {
		cr.res.Server.Notes = append(cr.res.Server.Notes, note)
	}
	cr.r.logf("images: %s", note)
	return nil
}

func joinSizes(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
