package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/loadgen/workload"
)

// Setup is what a benchmark sends and where: the client, the workload
// and what the results say of them.
type Setup struct {
	Client *loadgen.Client
	Mix    *workload.Mix
	// Head holds what the command says of the runs: the server, the API,
	// the workload, the seed, the image tokens and the notes.
	Head   *sweep.Results
	models *cli.Models
	model  string
	sized  bool
	close  func()
}

// Open reads the flags' files through (a malformed record stops
// everything), makes the client and, without -url, starts the simulator:
// nothing is sent yet.
func (o *Options) Open() (*Setup, error) {
	mix, sized, err := o.Bench.Open()
	if err != nil {
		return nil, err
	}
	s := &Setup{Mix: mix, sized: sized, model: o.Client.Model, close: func() {},
		Head: &sweep.Results{API: o.Client.API, Seed: o.Bench.Seed()}}
	if s.Client, err = o.Client.Client(o.Bench.Conns()); err != nil {
		return nil, err
	}
	s.models, err = cli.ParseModels(s.model)
	if err == nil && s.models != nil && mix.Turns != nil {
		err = errors.New("-model with weights: a session's turns would go to different models; give one -model with -turns")
	}
	if err != nil {
		return nil, err
	}
	if s.models != nil {
		s.model = s.models.Names[0] // sizes the prompts
		o.Sim.Adapters = s.models.Names
	}
	if o.Client.URL != "" {
		s.Head.Server = capacity.Server{URL: redact.URL(o.Client.URL), Model: s.model}
		return s, nil
	}
	srv, err := o.Sim.Start()
	if err != nil {
		return nil, err
	}
	s.close = srv.Close
	s.Client.BaseURL = srv.URL + "/v1"
	if s.models == nil {
		s.model = srv.Handler.Profile().Model
	}
	api := o.Client.API
	mix.Sizing = workload.SimulatorSizing(api != loadgen.Completions && !pooled(api))
	s.Head.Server = capacity.Server{URL: "simulator", Model: s.model, Simulated: true, Speed: o.Sim.Speed, Profile: o.Sim.Profile}
	s.Head.Notes = append(s.Head.Notes, fmt.Sprintf("llmload's simulated server, profile %q, at %g× speed: figures are in wall-clock time, of a server %g times faster than the profile's", o.Sim.Profile, o.Sim.Speed, o.Sim.Speed))
	return s, nil
}

// Close stops the simulator, if any, and the client's idle connections.
func (s *Setup) Close() {
	s.Client.CloseIdleConnections()
	s.Mix.Close()
	s.close()
}

// Prepare asks a server given by URL who it is and, for prompts the
// flags size, the size of its tokens, then makes the requests and checks
// the workload. A workload that cannot work is a usage error (status 2); the
// server's failure to answer is not.
func (o *Options) Prepare(ctx context.Context, s *Setup, stderr io.Writer) error {
	api, mix := o.Client.API, s.Mix
	if o.Client.URL != "" {
		if err := Identify(ctx, s.Client, o.Client.URL, &s.Head.Server); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", o.Client.Redactor().Error(err))
		}
		if !s.sized { // synthetic text and traces are sized in the server's tokens
			var err error
			if mix.Sizing, err = workload.Calibrate(ctx, s.Client, api, s.model); err != nil {
				return o.Client.Redactor().Error(err)
			}
			z := mix.Sizing
			s.Head.Notes = append(s.Head.Notes, fmt.Sprintf("prompt sizes calibrated from the server's usage: %.3g tokens a word, %d a message, %d a request", z.TokensPerWord, z.MessageTokens, z.ReplyTokens))
		}
	}
	if err := o.build(s); err != nil {
		return &usageError{Err: err}
	}
	if err := mix.Validate(); err != nil {
		return &usageError{Err: err}
	}
	sizes, _ := o.Images.Sizes()
	return o.Client.Redactor().Error(countImages(ctx, s.Client, mix, sizes, s.Head))
}

// build makes the requests of s's workload: the API, the model or the
// models in turn, -ignore-eos or -batch, the server's timings, the
// body's extra fields and the images.
func (o *Options) build(s *Setup) error {
	api, mix := o.Client.API, s.Mix
	mix.Builder = workload.Builder{API: api, Model: s.model, IgnoreEOS: o.Bench.IgnoreEOS()}
	if pooled(api) {
		mix.Builder = workload.Builder{API: api, Model: s.model, Batch: o.Bench.Batch()}
	} else {
		mix.Builder.ServerTimings = o.askServerTimings(s.Head.Server)
	}
	for k, v := range o.extra {
		if mix.Builder.Extra == nil {
			mix.Builder.Extra = make(map[string]any, len(o.extra))
		}
		mix.Builder.Extra[k] = v
	}
	if s.models != nil {
		mix.Builder.Models = s.models.Cycle(mix.Seed)
		s.Head.Server.Model = s.models.String()
		s.Head.Notes = append(s.Head.Notes, fmt.Sprintf("requests name the models %s in turn by smooth weighted round robin, a cycle of %d from a place drawn from the seed: each model's share is exact to within one request a cycle", s.models, len(mix.Builder.Models)))
	}
	var err error
	if mix.Builder.Images, err = o.Images.URLs(mix.Seed); err != nil {
		return err
	}
	s.Head.Workload = mix.String()
	if d := o.Images.Describe(); d != "" {
		s.Head.Workload += ", " + d
	}
	return nil
}

// pooled reports that api answers in one body: Embeddings and Rerank.
func pooled(api loadgen.API) bool { return api == loadgen.Embeddings || api == loadgen.Rerank }

// A usageError is a flag or a file that cannot work, found before
// anything runs: the command exits with status 2.
type usageError struct{ Err error }

func (e *usageError) Error() string { return e.Err.Error() }

// Unwrap returns the error found.
func (e *usageError) Unwrap() error { return e.Err }

// Status is the exit status of a command stopped by err before its runs:
// 2 for a usage error, 1 for anything else.
func Status(err error) int {
	if _, ok := errors.AsType[*usageError](err); ok {
		return 2
	}
	return 1
}
