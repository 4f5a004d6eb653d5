package deploytest

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestWiringChecksFail breaks the sidecar manifests one way at a time and
// requires the wiring checks to say what broke, so none of them is vacuous.
func TestWiringChecksFail(t *testing.T) {
	prober := func(m *manifests) *corev1.Container {
		return findContainer(&m.deployments[0].Spec.Template.Spec, proberContainerName)
	}
	config := func(m *manifests) *corev1.ConfigMap { return m.configMaps["vllm-prober-sidecar"] }
	// editConfig replaces the first old in the prober's config file by new.
	editConfig := func(m *manifests, old, new string) {
		config(m).Data["vllm-prober.yml"] = strings.Replace(config(m).Data["vllm-prober.yml"], old, new, 1)
	}
	// editVolumes calls edit on each volume of the pod.
	editVolumes := func(m *manifests, edit func(v *corev1.Volume)) {
		vs := m.deployments[0].Spec.Template.Spec.Volumes
		for i := range vs {
			edit(&vs[i])
		}
	}
	// keepMounts drops every volume mount of the prober but the first n.
	keepMounts := func(m *manifests, n int) {
		c := prober(m)
		c.VolumeMounts = c.VolumeMounts[:n]
	}
	for _, tc := range []struct {
		name   string
		mutate func(m *manifests)
		want   string
	}{
		{"target is not the pod's vLLM port", func(m *manifests) { editConfig(m, "127.0.0.1:8000", "127.0.0.1:8001") }, "not the pod's own vLLM port"},
		{"target is another host", func(m *manifests) { editConfig(m, "127.0.0.1:8000", "vllm:8000") }, "not the pod's own vLLM port"},
		{"unknown config key", func(m *manifests) {
			editConfig(m, "history_limit", "histroy_limit")
			config(m).Data["vllm-prober.yml"] += "\nbogus: 1\n"
		}, "config"},
		{"secret not mounted", func(m *manifests) { keepMounts(m, 1) }, "not in a mounted Secret"},
		{"secret file renamed", func(m *manifests) {
			editVolumes(m, func(v *corev1.Volume) {
				if v.Secret != nil {
					v.Secret.Items[0].Path = "token"
				}
			})
		}, "provides no file api-key"},
		{"secret key missing", func(m *manifests) {
			m.secrets["vllm-api-key"].StringData = map[string]string{"key": "x"}
		}, `key "api-key" not in its source`},
		{"config file not in ConfigMap", func(m *manifests) {
			cm := config(m)
			cm.Data["other.yml"] = cm.Data["vllm-prober.yml"]
			delete(cm.Data, "vllm-prober.yml")
		}, `has no key "vllm-prober.yml"`},
		{"secret file unreadable", func(m *manifests) {
			m.deployments[0].Spec.Template.Spec.SecurityContext.FSGroup = nil
		}, "cannot read /etc/vllm-prober/secrets/api-key"},
		{"liveness path", func(m *manifests) { prober(m).LivenessProbe.HTTPGet.Path = "/healthz" }, "liveness probe path"},
		{"readiness on vLLM port", func(m *manifests) {
			prober(m).ReadinessProbe.HTTPGet.Port = intstr.FromInt32(8000)
		}, "readiness probe port"},
		{"third container", func(m *manifests) {
			spec := &m.deployments[0].Spec.Template.Spec
			spec.Containers = append(spec.Containers, corev1.Container{Name: "extra"})
		}, "3 containers"},
		{"no memory limit", func(m *manifests) { delete(prober(m).Resources.Limits, corev1.ResourceMemory) }, "memory needs a request and a limit"},
		{"writable root", func(m *manifests) { *prober(m).SecurityContext.ReadOnlyRootFilesystem = false }, "not read-only"},
		{"ledger not mounted", func(m *manifests) { keepMounts(m, 2) }, "no writable volume"},
		{"ledger volume too small", func(m *manifests) {
			editVolumes(m, func(v *corev1.Volume) {
				if v.Name == "ledger" {
					q := resource.MustParse("16Mi")
					v.EmptyDir.SizeLimit = &q
				}
			})
		}, "emptyDir sizeLimit 16Mi below 48 MiB"},
		{"podmonitor port", func(m *manifests) {
			p := "http"
			m.podMonitors[0].Spec.PodMetricsEndpoints[0].Port = &p
		}, "does not scrape the prober port"},
		{"podmonitor job", func(m *manifests) {
			m.podMonitors[0].Spec.PodMetricsEndpoints[0].RelabelConfigs = nil
		}, `does not set job="vllm-prober"`},
		{"service selector", func(m *manifests) {
			m.services[0].Spec.Selector = map[string]string{"app": "other"}
		}, "selects no pods"},
		{"listen port not declared", func(m *manifests) {
			c := prober(m)
			for i, a := range c.Args {
				if strings.HasPrefix(a, "--web.listen-address") {
					c.Args[i] = "--web.listen-address=:9100"
				}
			}
		}, "listen port 9100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, files := readKustomization(t, filepath.Join(kubeDir, "sidecar"))
			m := decodeFiles(t, files...)
			tc.mutate(m)
			_, errs := checkManifests(t, m, true, nil)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no error containing %q; got %v", tc.want, errs)
		})
	}
}
