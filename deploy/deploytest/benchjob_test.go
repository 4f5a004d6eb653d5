package deploytest

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-prober/vllm-prober/bench"
)

// benchJobs finds the sharded bench's worker Job (Indexed) and merge Job.
func benchJobs(m *manifests) (workers, merge *batchv1.Job, err error) {
	for _, j := range m.jobs {
		args := j.Spec.Template.Spec.Containers[0].Args
		switch {
		case len(args) > 0 && args[0] == "bench":
			workers = j
		case len(args) > 0 && args[0] == "merge":
			merge = j
		}
	}
	if workers == nil || merge == nil {
		return nil, nil, fmt.Errorf("want a bench Job and a merge Job, got %d Jobs", len(m.jobs))
	}
	return workers, merge, nil
}

// checkBenchJob checks the wiring of a sharded bench: an Indexed Job whose
// completions, parallelism and --shard N agree, each pod's index reaching
// --shard through JOB_COMPLETION_INDEX, the common --start-at (literal or
// from a ConfigMap), worker flags bench accepts, and a merge Job that reads every
// shard's result from the same volume.
func checkBenchJob(m *manifests) []error {
	workers, merge, err := benchJobs(m)
	if err != nil {
		return []error{err}
	}
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	spec := workers.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion || spec.Completions == nil || spec.Parallelism == nil {
		return []error{fmt.Errorf("job %s: want completionMode Indexed with completions and parallelism", workers.Name)}
	}
	n := int(*spec.Completions)
	if int(*spec.Parallelism) != n {
		fail("job %s: parallelism %d, completions %d: every shard must run at once", workers.Name, *spec.Parallelism, n)
	}
	c := spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e, ok := env["JOB_COMPLETION_INDEX"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		fail("job %s: JOB_COMPLETION_INDEX must come from the completion-index annotation", workers.Name)
	}
	startAt := "" // literal in the args unless they read $(START_AT)
	if e, ok := env["START_AT"]; ok {
		if startAt, err = envConfigValue(m, e); err != nil {
			fail("job %s: START_AT: %v", workers.Name, err)
		}
	}
	dir, names := "", map[string]bool{}
	for i := range n {
		o, err := workerOptions(c.Args, i, startAt)
		if err != nil {
			fail("job %s, index %d: bench %q: %v", workers.Name, i, c.Args, err)
			continue
		}
		if o.Shard.Index != i || o.Shard.Count != n {
			fail("job %s, index %d: --shard %d/%d, want %d/%d", workers.Name, i, o.Shard.Index, o.Shard.Count, i, n)
		}
		dir, names[filepath.Join(o.ResultDir, o.ResultFilename)] = o.ResultDir, true
	}
	var inputs []string
	for _, a := range merge.Spec.Template.Spec.Containers[0].Args[1:] {
		if !strings.HasPrefix(a, "-") {
			inputs = append(inputs, a)
		}
	}
	if len(inputs) != n || !allIn(inputs, names) {
		fail("job %s merges %q, want the %d workers' results %v", merge.Name, inputs, n, names)
	}
	if !slices.ContainsFunc(merge.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--wait=") }) {
		fail("job %s: merge starts with the workers and needs --wait", merge.Name)
	}
	for _, j := range []*batchv1.Job{workers, merge} {
		if err := mountsClaim(m, j, dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// workerOptions parses a worker's args with index i as bench does, with
// the $(VAR) references Kubernetes expands.
func workerOptions(args []string, i int, startAt string) (bench.Options, error) {
	r := strings.NewReplacer("$(JOB_COMPLETION_INDEX)", strconv.Itoa(i), "$(START_AT)", startAt)
	expanded := make([]string, len(args))
	for k, a := range args {
		expanded[k] = r.Replace(a)
	}
	app := kingpin.New("vllm-prober", "")
	app.Terminate(nil)
	flags := bench.RegisterBenchFlags(app.Command("bench", ""))
	if _, err := app.Parse(expanded); err != nil {
		return bench.Options{}, err
	}
	return flags.Options()
}

// envConfigValue returns the ConfigMap value an env var reads, checked as
// an RFC 3339 time.
func envConfigValue(m *manifests, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
		return "", errors.New("want a configMapKeyRef")
	}
	ref := e.ValueFrom.ConfigMapKeyRef
	cm, ok := m.configMaps[ref.Name]
	if !ok {
		return "", fmt.Errorf("ConfigMap %s missing", ref.Name)
	}
	v, ok := cm.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("ConfigMap %s has no key %s", ref.Name, ref.Key)
	}
	if _, err := time.Parse(time.RFC3339, v); err != nil {
		return "", fmt.Errorf("ConfigMap %s key %s: %w", ref.Name, ref.Key, err)
	}
	return v, nil
}

func allIn(xs []string, set map[string]bool) bool {
	for _, x := range xs {
		if !set[x] {
			return false
		}
	}
	return true
}

// mountsClaim checks that j mounts, at dir, a volume of a shipped
// ReadWriteMany PersistentVolumeClaim.
func mountsClaim(m *manifests, j *batchv1.Job, dir string) error {
	pod := j.Spec.Template.Spec
	for _, vm := range pod.Containers[0].VolumeMounts {
		if vm.MountPath != dir {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != vm.Name || v.PersistentVolumeClaim == nil {
				continue
			}
			pvc, ok := m.claims[v.PersistentVolumeClaim.ClaimName]
			if !ok || !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
				return fmt.Errorf("job %s: claim %s missing or not ReadWriteMany", j.Name, v.PersistentVolumeClaim.ClaimName)
			}
			return nil
		}
	}
	return fmt.Errorf("job %s: no PersistentVolumeClaim mounted at %s", j.Name, dir)
}

func TestBenchJobManifests(t *testing.T) {
	_, files := readKustomization(t, filepath.Join(kubeDir, "bench-job"))
	for _, err := range checkBenchJob(decodeFiles(t, files...)) {
		t.Error(err)
	}
}
