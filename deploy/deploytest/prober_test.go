package deploytest

import (
	"fmt"
	"net/url"
	"path"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-prober/vllm-prober/config"
)

// checkProber checks the vllm-prober container of d: command line, config
// loaded from its ConfigMap, health probes, resources, hardening, the
// Secret files the config names and the ledger volume. It returns the
// loaded config (nil when it could not be loaded).
func checkProber(m *manifests, d *appsv1.Deployment, dir string) (*config.Config, []error) {
	spec := &d.Spec.Template.Spec
	c := findContainer(spec, proberContainerName)
	if c == nil {
		return nil, []error{fmt.Errorf("deployment %s: %w", d.Name, errNoProber)}
	}
	errs := checkProberCommand(c)
	errs = append(errs, checkProberProbes(c)...)
	errs = append(errs, checkProberResources(c)...)
	errs = append(errs, checkHardening(spec, c)...)
	file, ok := argValue(c.Args, "--config.file")
	if !ok {
		return nil, append(errs, fmt.Errorf("container %s: no --config.file", c.Name))
	}
	data, err := proberFile(m, spec, c, file)
	if err != nil {
		return nil, append(errs, fmt.Errorf("config %s: %w", file, err))
	}
	cfg, err := loadConfig(dir, []byte(data))
	if err != nil {
		return nil, append(errs, fmt.Errorf("config %s: %w", file, err))
	}
	errs = append(errs, checkSecretFiles(m, spec, c, cfg)...)
	return cfg, append(errs, checkLedgerVolume(spec, c, cfg.Global.Ledger)...)
}

// checkLedgerVolume requires a writable volume under the ledger, and an
// emptyDir size limit that holds the current file and every rotated one.
func checkLedgerVolume(spec *corev1.PodSpec, c *corev1.Container, l config.Ledger) []error {
	if l.Path == "" {
		return nil
	}
	v := mountedVolume(spec, c, path.Dir(l.Path))
	if v == nil || v.EmptyDir == nil && v.PersistentVolumeClaim == nil {
		return []error{fmt.Errorf("ledger %s: no writable volume mounted at its directory", l.Path)}
	}
	if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil {
		return nil
	}
	need := int64(l.MaxSizeMB) * int64(l.MaxFiles+1) << 20
	if v.EmptyDir.SizeLimit.Value() < need {
		return []error{fmt.Errorf("ledger %s: emptyDir sizeLimit %s below %d MiB (max_size_mb x (max_files+1))", l.Path, v.EmptyDir.SizeLimit.String(), need>>20)}
	}
	return nil
}

func checkProberCommand(c *corev1.Container) []error {
	var errs []error
	if len(c.Command) != 0 {
		errs = append(errs, fmt.Errorf("container %s: command overrides the image entrypoint", c.Name))
	}
	if len(c.Args) == 0 || c.Args[0] != "run" {
		errs = append(errs, fmt.Errorf("container %s: first argument must be the run command, got %q", c.Name, c.Args))
	}
	addr, ok := argValue(c.Args, "--web.listen-address")
	if !ok {
		addr = ":" + strconv.Itoa(proberPort)
	}
	p, err := listenPort(addr)
	if err != nil {
		return append(errs, err)
	}
	if containerPort(c, intstr.FromInt32(p)) == 0 {
		errs = append(errs, fmt.Errorf("container %s: listen port %d is not a container port", c.Name, p))
	}
	return errs
}

func checkProberProbes(c *corev1.Container) []error {
	addr, ok := argValue(c.Args, "--web.listen-address")
	if !ok {
		addr = ":" + strconv.Itoa(proberPort)
	}
	listen, err := listenPort(addr)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/-/healthy"}, {"readiness", c.ReadinessProbe, "/-/ready"}} {
		switch {
		case p.probe == nil || p.probe.HTTPGet == nil:
			errs = append(errs, fmt.Errorf("container %s: no HTTP %s probe", c.Name, p.kind))
		case p.probe.HTTPGet.Path != p.path:
			errs = append(errs, fmt.Errorf("container %s: %s probe path %q, want %q", c.Name, p.kind, p.probe.HTTPGet.Path, p.path))
		case containerPort(c, p.probe.HTTPGet.Port) != listen:
			errs = append(errs, fmt.Errorf("container %s: %s probe port %s is not the listen port %d", c.Name, p.kind, p.probe.HTTPGet.Port.String(), listen))
		}
	}
	return errs
}

func checkProberResources(c *corev1.Container) []error {
	var errs []error
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[r]
		lim, okLim := c.Resources.Limits[r]
		switch {
		case !okReq || !okLim:
			errs = append(errs, fmt.Errorf("container %s: %s needs a request and a limit", c.Name, r))
		case req.Cmp(lim) > 0:
			errs = append(errs, fmt.Errorf("container %s: %s request %s above limit %s", c.Name, r, req.String(), lim.String()))
		}
	}
	return errs
}

// checkHardening requires a non-root, read-only, unprivileged prober.
func checkHardening(spec *corev1.PodSpec, c *corev1.Container) []error {
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil && spec.SecurityContext != nil {
		nonRoot = spec.SecurityContext.RunAsNonRoot
	}
	var errs []error
	if nonRoot == nil || !*nonRoot {
		errs = append(errs, fmt.Errorf("container %s: runAsNonRoot is not set", c.Name))
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		errs = append(errs, fmt.Errorf("container %s: root filesystem is not read-only", c.Name))
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		errs = append(errs, fmt.Errorf("container %s: privilege escalation is allowed", c.Name))
	}
	return errs
}

// checkSecretFiles requires every credentials file the config names to be
// a key of a Secret mounted as a file in the prober container.
func checkSecretFiles(m *manifests, spec *corev1.PodSpec, c *corev1.Container, cfg *config.Config) []error {
	var errs []error
	for _, t := range cfg.Targets {
		for _, f := range credentialFiles(t) {
			v := mountedVolume(spec, c, path.Dir(f))
			if v == nil || v.Secret == nil {
				errs = append(errs, fmt.Errorf("target %s: %s is not in a mounted Secret", t.Name, f))
				continue
			}
			if files := volumeFiles(m, v); files != nil && !files[path.Base(f)] {
				errs = append(errs, fmt.Errorf("target %s: Secret %q provides no file %s", t.Name, v.Secret.SecretName, path.Base(f)))
			}
			if !readable(spec, c, v.Secret, path.Base(f)) {
				errs = append(errs, fmt.Errorf("target %s: the prober's user cannot read %s (file mode and fsGroup)", t.Name, f))
			}
		}
	}
	return errs
}

// credentialFiles lists the secret files a target's HTTP client reads.
func credentialFiles(t config.Target) []string {
	h := t.HTTPClientConfig
	var files []string
	if h.Authorization != nil && h.Authorization.CredentialsFile != "" {
		files = append(files, h.Authorization.CredentialsFile)
	}
	if h.BasicAuth != nil && h.BasicAuth.PasswordFile != "" {
		files = append(files, h.BasicAuth.PasswordFile)
	}
	if h.BearerTokenFile != "" {
		files = append(files, h.BearerTokenFile)
	}
	return files
}

// checkSidecar checks the sidecar wiring: two containers, and every target
// of the prober is the pod's own vLLM port on loopback, with its /metrics.
func checkSidecar(d *appsv1.Deployment, cfg *config.Config) []error {
	spec := &d.Spec.Template.Spec
	if len(spec.Containers) != 2 {
		return []error{fmt.Errorf("deployment %s: %d containers, want vLLM and the prober", d.Name, len(spec.Containers))}
	}
	var server *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name != proberContainerName {
			server = &spec.Containers[i]
		}
	}
	if server == nil || len(server.Ports) == 0 {
		return []error{fmt.Errorf("deployment %s: the vLLM container declares no port", d.Name)}
	}
	var errs []error
	if len(cfg.Targets) == 0 {
		errs = append(errs, fmt.Errorf("deployment %s: the prober has no target", d.Name))
	}
	for _, t := range cfg.Targets {
		u, err := url.Parse(t.URL)
		if err != nil {
			errs = append(errs, fmt.Errorf("target %s: %w", t.Name, err))
			continue
		}
		if u.Hostname() != "127.0.0.1" || urlPort(u) != strconv.Itoa(int(server.Ports[0].ContainerPort)) {
			errs = append(errs, fmt.Errorf("target %s: %s is not the pod's own vLLM port 127.0.0.1:%d", t.Name, t.URL, server.Ports[0].ContainerPort))
		}
		if t.MetricsPath != "/metrics" {
			errs = append(errs, fmt.Errorf("target %s: metrics_path %q, want the server's /metrics", t.Name, t.MetricsPath))
		}
	}
	return errs
}

// readable reports whether the prober's user can read file of a Secret
// volume: world-readable, or group-readable with the pod's fsGroup equal to
// the container's group.
func readable(spec *corev1.PodSpec, c *corev1.Container, src *corev1.SecretVolumeSource, file string) bool {
	mode := int32(corev1.SecretVolumeSourceDefaultMode)
	if src.DefaultMode != nil {
		mode = *src.DefaultMode
	}
	for _, it := range src.Items {
		if it.Path == file && it.Mode != nil {
			mode = *it.Mode
		}
	}
	if mode&0o004 != 0 {
		return true
	}
	var group *int64
	if spec.SecurityContext != nil {
		group = spec.SecurityContext.RunAsGroup
	}
	if c.SecurityContext != nil && c.SecurityContext.RunAsGroup != nil {
		group = c.SecurityContext.RunAsGroup
	}
	fs := spec.SecurityContext
	return mode&0o040 != 0 && group != nil && fs != nil && fs.FSGroup != nil && *fs.FSGroup == *group
}
