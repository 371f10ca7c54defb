// Package kubernetes holds the tests of the manifests beside it: an
// Indexed Job and a headless Service that run a sharded speed-test matrix,
// one shard a pod, and the Dockerfile of its image. The tests decode the
// manifests strictly into the Kubernetes API's types, check that their
// parts agree, build the image's binary as the Dockerfile does, and start
// one process a pod with the environment the manifests give the pods.
package kubernetes
