package deploytest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	proberContainerName = "vllm-prober"
	proberPort          = 9478
)

// selects reports whether sel selects objects labelled with set.
func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}

// argValue returns the value of --name=value or "--name value" in args.
func argValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func findContainer(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

// containerPort resolves a named or numbered port of c; 0 when c has none.
func containerPort(c *corev1.Container, p intstr.IntOrString) int32 {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

// mountedVolume returns the volume mounted at dir in c, or nil.
func mountedVolume(spec *corev1.PodSpec, c *corev1.Container, dir string) *corev1.Volume {
	for _, vm := range c.VolumeMounts {
		if path.Clean(vm.MountPath) != path.Clean(dir) {
			continue
		}
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == vm.Name {
				return &spec.Volumes[i]
			}
		}
	}
	return nil
}

// checkPodSpec checks the references inside a Deployment: selector, volume
// mounts, ConfigMaps and Secrets (those named in external are created
// outside the manifests), and probe ports.
func checkPodSpec(m *manifests, d *appsv1.Deployment, external map[string]bool) []error {
	var errs []error
	spec := &d.Spec.Template.Spec
	if !selects(d.Spec.Selector, d.Spec.Template.Labels) {
		errs = append(errs, fmt.Errorf("deployment %s: selector does not select its pod template", d.Name))
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
		errs = append(errs, checkVolumeSource(m, v, external)...)
	}
	for _, c := range spec.Containers {
		for _, vm := range c.VolumeMounts {
			if !volumes[vm.Name] {
				errs = append(errs, fmt.Errorf("container %s: mount of undeclared volume %q", c.Name, vm.Name))
			}
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil && p.HTTPGet != nil && containerPort(&c, p.HTTPGet.Port) == 0 {
				errs = append(errs, fmt.Errorf("container %s: probe on undeclared port %s", c.Name, p.HTTPGet.Port.String()))
			}
		}
	}
	return errs
}

func checkVolumeSource(m *manifests, v corev1.Volume, external map[string]bool) []error {
	var keys map[string]bool
	var items []corev1.KeyToPath
	switch {
	case v.ConfigMap != nil:
		cm, ok := m.configMaps[v.ConfigMap.Name]
		if !ok {
			return []error{fmt.Errorf("volume %s: ConfigMap %q not in the manifests", v.Name, v.ConfigMap.Name)}
		}
		keys, items = mapKeys(cm.Data), v.ConfigMap.Items
	case v.Secret != nil:
		if external[v.Secret.SecretName] {
			return nil
		}
		s, ok := m.secrets[v.Secret.SecretName]
		if !ok {
			return []error{fmt.Errorf("volume %s: Secret %q not in the manifests", v.Name, v.Secret.SecretName)}
		}
		keys, items = secretKeys(s), v.Secret.Items
	default:
		return nil
	}
	var errs []error
	for _, it := range items {
		if !keys[it.Key] {
			errs = append(errs, fmt.Errorf("volume %s: key %q not in its source", v.Name, it.Key))
		}
	}
	return errs
}

func mapKeys(m map[string]string) map[string]bool {
	keys := map[string]bool{}
	for k := range m {
		keys[k] = true
	}
	return keys
}

func secretKeys(s *corev1.Secret) map[string]bool {
	keys := mapKeys(s.StringData)
	for k := range s.Data {
		keys[k] = true
	}
	return keys
}

// volumeFiles lists the file names a ConfigMap or Secret volume provides;
// nil when the source is external (every name is accepted).
func volumeFiles(m *manifests, v *corev1.Volume) map[string]bool {
	var items []corev1.KeyToPath
	var keys map[string]bool
	switch {
	case v.ConfigMap != nil:
		if cm, ok := m.configMaps[v.ConfigMap.Name]; ok {
			keys = mapKeys(cm.Data)
		}
		items = v.ConfigMap.Items
	case v.Secret != nil:
		s, ok := m.secrets[v.Secret.SecretName]
		if !ok {
			return nil
		}
		keys, items = secretKeys(s), v.Secret.Items
	}
	if len(items) == 0 {
		return keys
	}
	files := map[string]bool{}
	for _, it := range items {
		files[it.Path] = true
	}
	return files
}

// proberFile returns the content of the file at p as mounted from a
// ConfigMap into c, or an error naming what is missing.
func proberFile(m *manifests, spec *corev1.PodSpec, c *corev1.Container, p string) (string, error) {
	v := mountedVolume(spec, c, path.Dir(p))
	if v == nil || v.ConfigMap == nil {
		return "", fmt.Errorf("no ConfigMap mounted at %s", path.Dir(p))
	}
	cm, ok := m.configMaps[v.ConfigMap.Name]
	if !ok {
		return "", fmt.Errorf("ConfigMap %q not in the manifests", v.ConfigMap.Name)
	}
	key := path.Base(p)
	for _, it := range v.ConfigMap.Items {
		if it.Path == key {
			key = it.Key
		}
	}
	data, ok := cm.Data[key]
	if !ok {
		return "", fmt.Errorf("ConfigMap %q has no key %q", cm.Name, key)
	}
	return data, nil
}

// listenPort is the port of a --web.listen-address value.
func listenPort(addr string) (int32, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	return int32(n), nil
}

// urlPort is the port of a target URL, with the scheme default.
func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

var errNoProber = errors.New("no vllm-prober container")
