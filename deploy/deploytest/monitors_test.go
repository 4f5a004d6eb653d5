package deploytest

import (
	"fmt"
	"strings"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podsOf returns the Deployments whose pods the labels selector function
// accepts.
func podsOf(m *manifests, match func(map[string]string) bool) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, d := range m.deployments {
		if match(d.Spec.Template.Labels) {
			out = append(out, d)
		}
	}
	return out
}

// podPort resolves a port of any container of d.
func podPort(d *appsv1.Deployment, p intstr.IntOrString) int32 {
	for i := range d.Spec.Template.Spec.Containers {
		if n := containerPort(&d.Spec.Template.Spec.Containers[i], p); n != 0 {
			return n
		}
	}
	return 0
}

// checkServices requires every Service to select pods and every target
// port to exist on them.
func checkServices(m *manifests) []error {
	var errs []error
	for _, s := range m.services {
		pods := podsOf(m, func(l map[string]string) bool { return matchesAll(s.Spec.Selector, l) })
		if len(pods) == 0 {
			errs = append(errs, fmt.Errorf("service %s: selects no pods", s.Name))
			continue
		}
		for _, p := range s.Spec.Ports {
			if podPort(pods[0], p.TargetPort) == 0 {
				errs = append(errs, fmt.Errorf("service %s: target port %s not on the pods", s.Name, p.TargetPort.String()))
			}
		}
	}
	return errs
}

// matchesAll is a Service selector match; an empty selector selects nothing
// here because the manifests never rely on manual Endpoints.
func matchesAll(sel, set map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if set[k] != v {
			return false
		}
	}
	return true
}

// checkMonitors requires every PodMonitor and ServiceMonitor to select the
// prober and to scrape a port that carries the prober's listen port.
func checkMonitors(m *manifests) []error {
	var errs []error
	for _, pm := range m.podMonitors {
		pods := podsOf(m, func(l map[string]string) bool { return selects(&pm.Spec.Selector, l) })
		if len(pods) == 0 {
			errs = append(errs, fmt.Errorf("podmonitor %s: selects no pods", pm.Name))
			continue
		}
		for _, e := range pm.Spec.PodMetricsEndpoints {
			if e.Port == nil || podPort(pods[0], intstr.FromString(*e.Port)) != proberPort {
				errs = append(errs, fmt.Errorf("podmonitor %s: endpoint does not scrape the prober port %d", pm.Name, proberPort))
			}
			if !setsJob(e.RelabelConfigs) {
				errs = append(errs, fmt.Errorf("podmonitor %s: endpoint does not set job=%q", pm.Name, ruleJob))
			}
		}
	}
	for _, sm := range m.serviceMonitors {
		var svc *corev1.Service
		for _, s := range m.services {
			if selects(&sm.Spec.Selector, s.Labels) {
				svc = s
			}
		}
		if svc == nil {
			errs = append(errs, fmt.Errorf("servicemonitor %s: selects no service", sm.Name))
			continue
		}
		pods := podsOf(m, func(l map[string]string) bool { return matchesAll(svc.Spec.Selector, l) })
		for _, e := range sm.Spec.Endpoints {
			if !scrapesProber(svc, pods, e.Port) {
				errs = append(errs, fmt.Errorf("servicemonitor %s: endpoint port %q does not reach the prober port %d", sm.Name, e.Port, proberPort))
			}
			if !setsJob(e.RelabelConfigs) {
				errs = append(errs, fmt.Errorf("servicemonitor %s: endpoint does not set job=%q", sm.Name, ruleJob))
			}
		}
	}
	return errs
}

func scrapesProber(svc *corev1.Service, pods []*appsv1.Deployment, port string) bool {
	for _, p := range svc.Spec.Ports {
		if p.Name == port && len(pods) > 0 && podPort(pods[0], p.TargetPort) == proberPort {
			return true
		}
	}
	return false
}

// ruleJob is the job label the generated rules select on.
const ruleJob = "vllm-prober"

// setsJob reports whether the relabelings end with job set to ruleJob.
func setsJob(rcs []monv1.RelabelConfig) bool {
	job := false
	for _, rc := range rcs {
		if rc.TargetLabel != "job" {
			continue
		}
		action := strings.ToLower(rc.Action)
		job = (action == "" || action == "replace") && len(rc.SourceLabels) == 0 &&
			rc.Replacement != nil && *rc.Replacement == ruleJob
	}
	return job
}
