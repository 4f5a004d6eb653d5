// Package deploytest checks the deployment artefacts: the root Dockerfile,
// the Kubernetes manifests under deploy/kubernetes, the Helm chart under
// deploy/helm (behind the e2e build tag, since it needs the helm binary) and
// the compose stack under deploy/compose.
//
// Every Kubernetes object is decoded strictly (unknown fields fail) into the
// official k8s.io/api and prometheus-operator types, the wiring between
// objects is checked (selectors, ports, volumes, Secrets mounted as the files
// the prober config names) and every embedded prober config is loaded with
// the config package. The package holds tests only.
package deploytest
