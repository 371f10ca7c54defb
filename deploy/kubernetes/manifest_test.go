package kubernetes

import (
	"bytes"
	"debug/elf"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const manifestFile = "llmload.yaml"

// fleetSecret is the Secret that holds the fleet's token.
const fleetSecret = "llmload-fleet"

func readManifest(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(manifestFile)
	require.NoError(t, err)
	return string(b)
}

// manifests are the objects of llmload.yaml, decoded strictly.
type manifests struct {
	job     *batchv1.Job
	service *corev1.Service
}

// decodeManifests splits a YAML stream into its documents and decodes
// each strictly into its kind's Kubernetes type: a field the type does not
// have, or a value of the wrong type, is an error.
func decodeManifests(b []byte) (*manifests, error) {
	m := &manifests{}
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var err error
		switch tm.APIVersion + " " + tm.Kind {
		case "batch/v1 Job":
			m.job = &batchv1.Job{}
			err = yaml.UnmarshalStrict([]byte(doc), m.job)
		case "v1 Service":
			m.service = &corev1.Service{}
			err = yaml.UnmarshalStrict([]byte(doc), m.service)
		default:
			err = fmt.Errorf("unexpected kind %s %s", tm.APIVersion, tm.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
	}
	if m.job == nil || m.service == nil {
		return nil, fmt.Errorf("want a Job and a Service")
	}
	return m, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	b, err := os.ReadFile(manifestFile)
	require.NoError(t, err)
	m, err := decodeManifests(b)
	require.NoError(t, err)
	return m
}

// TestManifestsDecodeStrictly: the manifests are valid Kubernetes objects
// field for field, and a misspelt or misplaced field is caught.
func TestManifestsDecodeStrictly(t *testing.T) {
	b, err := os.ReadFile(manifestFile)
	require.NoError(t, err)
	_, err = decodeManifests(b)
	require.NoError(t, err)
	for name, edit := range map[string][2]string{
		"a misspelt field":           {"completionMode: Indexed", "completionsMode: Indexed"},
		"a field in the wrong place": {"      subdomain: llmload", "      subdomain: llmload\n      completions: 4"},
		"a value of the wrong type":  {"parallelism: 4", "parallelism: four"},
	} {
		bad := strings.Replace(string(b), edit[0], edit[1], 1)
		require.NotEqual(t, string(b), bad, name)
		_, err := decodeManifests([]byte(bad))
		assert.Error(t, err, name)
	}
}

// container returns the Job's one container.
func (m *manifests) container(t *testing.T) corev1.Container {
	t.Helper()
	cs := m.job.Spec.Template.Spec.Containers
	require.Len(t, cs, 1)
	return cs[0]
}

// flag returns the value of -name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func envValue(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// TestManifestsAgree: the parts of the deployment that must agree do. The
// Job is Indexed with as many pods at once as it completes, and -shards
// says that many; pod 0 leads and the others join it by the name the
// headless Service gives it; the ports match; the pods are spread over
// nodes, run as a user that is not root, have their resources set, and
// write the results on the volume.
func TestManifestsAgree(t *testing.T) {
	m := loadManifests(t)
	job, svc := m.job, m.service
	spec := job.Spec
	require.NotNil(t, spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *spec.CompletionMode)
	require.NotNil(t, spec.Completions)
	require.NotNil(t, spec.Parallelism)
	assert.Equal(t, *spec.Completions, *spec.Parallelism, "every shard runs at once")
	c := m.container(t)
	shards, ok := flagValue(c.Args, "shards")
	require.True(t, ok, "-shards")
	assert.Equal(t, strconv.Itoa(int(*spec.Completions)), shards, "-shards is the Job's completions")
	index, _ := flagValue(c.Args, "shard-index")
	assert.Equal(t, "$(JOB_COMPLETION_INDEX)", index, "pod 0 leads")
	e, ok := envValue(c, "JOB_COMPLETION_INDEX")
	require.True(t, ok)
	require.NotNil(t, e.ValueFrom)
	assert.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", e.ValueFrom.FieldRef.FieldPath)

	// The headless Service names the pods: <job>-<index>.<service>.
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
	assert.True(t, svc.Spec.PublishNotReadyAddresses, "followers find pod 0 before it is ready")
	pod := job.Spec.Template
	assert.Equal(t, svc.Name, pod.Spec.Subdomain)
	for k, v := range svc.Spec.Selector {
		assert.Equal(t, v, pod.Labels[k], "the Service selects the pods: %s", k)
	}
	// Two ports, each the Service's and the container's: the shards'
	// (-listen) and the client's own metrics (-metrics-listen), scraped on
	// every pod.
	require.Len(t, svc.Spec.Ports, 2)
	require.Len(t, c.Ports, 2)
	var port corev1.ServicePort
	for i, name := range []string{"shard", "metrics"} {
		sp, cp := svc.Spec.Ports[i], c.Ports[i]
		assert.Equal(t, name, sp.Name)
		assert.Equal(t, sp.TargetPort.String(), cp.Name)
		assert.Equal(t, sp.Port, cp.ContainerPort)
		flag := map[string]string{"shard": "listen", "metrics": "metrics-listen"}[name]
		listen, _ := flagValue(c.Args, flag)
		assert.Equal(t, fmt.Sprintf(":%d", cp.ContainerPort), listen, "-%s", flag)
		if name == "shard" {
			port = sp
		}
	}
	join, _ := flagValue(c.Args, "join")
	assert.Equal(t, "$(LLMLOAD_LEADER)", join)
	leader, ok := envValue(c, "LLMLOAD_LEADER")
	require.True(t, ok)
	u, err := url.Parse(leader.Value)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%s-0.%s", job.Name, svc.Name), u.Hostname(), "pod 0's stable name")
	assert.Equal(t, strconv.Itoa(int(port.Port)), u.Port())

	// The fleet's secret from a Secret, by the variable's name: never on
	// the command line.
	tokenEnv, ok := flagValue(c.Args, "fleet-token-env")
	require.True(t, ok, "-fleet-token-env")
	assert.NotContains(t, tokenEnv, "$(", "the flag names the variable; its value is not expanded into the args")
	tok, ok := envValue(c, tokenEnv)
	require.True(t, ok, "the container's env has %s", tokenEnv)
	require.NotNil(t, tok.ValueFrom, "%s comes from a Secret", tokenEnv)
	require.NotNil(t, tok.ValueFrom.SecretKeyRef, "%s comes from a Secret", tokenEnv)
	assert.Equal(t, fleetSecret, tok.ValueFrom.SecretKeyRef.Name)
	assert.Empty(t, tok.Value)
	for _, a := range c.Args {
		assert.NotContains(t, a, "$("+tokenEnv+")", "the secret is not expanded into an argument")
	}
	assert.Contains(t, readManifest(t), "kubectl create secret generic "+fleetSecret, "the manifest says how to make the Secret")

	// One shard a node.
	aff := pod.Spec.Affinity
	require.NotNil(t, aff)
	require.NotNil(t, aff.PodAntiAffinity)
	terms := aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	require.Len(t, terms, 1)
	assert.Equal(t, "kubernetes.io/hostname", terms[0].TopologyKey)
	for k, v := range terms[0].LabelSelector.MatchLabels {
		assert.Equal(t, v, pod.Labels[k])
	}

	// Not root, nothing more than it needs.
	psc := pod.Spec.SecurityContext
	require.NotNil(t, psc)
	require.NotNil(t, psc.RunAsNonRoot)
	assert.True(t, *psc.RunAsNonRoot)
	require.NotNil(t, psc.RunAsUser)
	assert.NotZero(t, *psc.RunAsUser)
	require.NotNil(t, c.SecurityContext)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.Contains(t, c.SecurityContext.Capabilities.Drop, corev1.Capability("ALL"))

	// Resources: Guaranteed, so a shard's CPUs are its own.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		assert.False(t, req.IsZero(), "%s request", r)
		assert.True(t, req.Equal(lim), "%s: requests equal limits", r)
	}

	// The results go to a volume.
	results, ok := flagValue(c.Args, "results")
	require.True(t, ok)
	mounted := false
	for _, vm := range c.VolumeMounts {
		if filepath.Dir(results) == vm.MountPath {
			mounted = true
		}
	}
	assert.True(t, mounted, "-results %s is on a volume", results)
	format, _ := flagValue(c.Args, "format")
	assert.Equal(t, "json", format, "the results in pod 0's log")
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// dockerBuild is the Dockerfile's build of the binary: its environment,
// arguments, output and package.
type dockerBuild struct {
	env       []string
	args      []string
	output    string
	pkg       string
	finalUser string
	stages    int
	entry     string
	copied    string
}

// readDockerfile reads the Dockerfile's build stage's go build and its
// final stage's user and entry point.
func readDockerfile(t *testing.T) dockerBuild {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	var d dockerBuild
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "FROM "):
			d.stages++
			d.finalUser = ""
		case strings.HasPrefix(line, "USER "):
			d.finalUser = strings.TrimPrefix(line, "USER ")
		case strings.HasPrefix(line, "ENTRYPOINT "):
			d.entry = line
		case strings.HasPrefix(line, "COPY --from="):
			f := strings.Fields(line)
			d.copied = f[len(f)-1]
		case strings.HasPrefix(line, "RUN ") && strings.Contains(line, " go build "):
			words := shellWords(strings.TrimPrefix(line, "RUN "))
			i := 0
			for ; strings.Contains(words[i], "="); i++ {
				d.env = append(d.env, words[i])
			}
			require.Equal(t, []string{"go", "build"}, words[i:i+2])
			for j := i + 2; j < len(words); j++ {
				switch {
				case words[j] == "-o":
					d.output = words[j+1]
					j++
				case strings.HasPrefix(words[j], "./"):
					d.pkg = words[j]
				default:
					d.args = append(d.args, words[j])
				}
			}
		}
	}
	return d
}

// shellWords splits a command line into words as a shell does, for the
// quoting a Dockerfile's RUN line uses: "..." and '...'.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// buildBinary builds the image's binary as the Dockerfile does, once.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		d := readDockerfile(t)
		dir, err := os.MkdirTemp("", "llmload-deploy-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, filepath.Base(d.output))
		cmd := exec.Command("go", append(append([]string{"build"}, d.args...), "-o", binary, d.pkg)...)
		cmd.Dir = filepath.Join("..", "..") // the repository's root, the image's build context
		cmd.Env = append(os.Environ(), d.env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out.String())
		}
	})
	require.NoError(t, buildErr)
	return binary
}

// TestDockerfile: the image is built in two stages, its binary is static
// (it runs on a base with no C library), and it runs as a user that is not
// root.
func TestDockerfile(t *testing.T) {
	d := readDockerfile(t)
	assert.GreaterOrEqual(t, d.stages, 2, "multi-stage")
	assert.Contains(t, d.env, "CGO_ENABLED=0")
	uid, _, _ := strings.Cut(d.finalUser, ":")
	n, err := strconv.Atoi(uid)
	require.NoError(t, err, "USER is numeric, so runAsNonRoot can check it: %q", d.finalUser)
	assert.NotZero(t, n)
	assert.Contains(t, d.entry, d.copied)
	assert.Equal(t, "./examples/matrix", d.pkg)

	bin := buildBinary(t)
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no interpreter")
		assert.NotEqual(t, elf.PT_DYNAMIC, p.Type, "nor dynamic section")
	}
	out, err := exec.Command(bin, "-h").CombinedOutput()
	assert.Contains(t, string(out), "-shard-index", "the binary is the matrix command: %v", err)
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if binary != "" {
			os.RemoveAll(filepath.Dir(binary))
		}
	}))
}
