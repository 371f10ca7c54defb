module github.com/llmload/llmload

go 1.26

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/prometheus/common v0.74.0 // indirect
	github.com/tmaxmax/go-sse v0.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
)
