{{/* Chart name. */}}
{{- define "vllm-prober.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified release name. */}}
{{- define "vllm-prober.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selector labels; the component is the mode. */}}
{{- define "vllm-prober.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vllm-prober.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end -}}

{{/* Common labels. */}}
{{- define "vllm-prober.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "vllm-prober.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Name of the Secret holding the API keys. */}}
{{- define "vllm-prober.secretName" -}}
{{- default (printf "%s-api-keys" (include "vllm-prober.fullname" .)) .Values.auth.existingSecret -}}
{{- end -}}

{{/* Directory the API key files are mounted in. */}}
{{- define "vllm-prober.secretDir" -}}/etc/vllm-prober/secrets{{- end -}}

{{/* Bearer authorization reading one key of the auth Secret. */}}
{{- define "vllm-prober.authorization" -}}
authorization:
  type: Bearer
  credentials_file: {{ printf "%s/%s" (include "vllm-prober.secretDir" .root) .key }}
{{- end -}}

{{/* The targets of the config: the pod's own vLLM in sidecar mode, the
     `targets` value (without chart-only keys) in central mode. */}}
{{- define "vllm-prober.targets" -}}
{{- $targets := list -}}
{{- if eq .Values.mode "sidecar" -}}
{{- $t := dict "name" (default (include "vllm-prober.fullname" .) .Values.vllm.targetName) "url" (printf "http://127.0.0.1:%v" .Values.vllm.port) "metrics_path" "/metrics" -}}
{{- if .Values.auth.enabled -}}
{{- $_ := set $t "http_client_config" (include "vllm-prober.authorization" (dict "root" . "key" .Values.auth.secretKey) | fromYaml) -}}
{{- end -}}
{{- $targets = append $targets $t -}}
{{- else -}}
{{- range .Values.targets -}}
{{- $t := omit . "apiKeySecretKey" -}}
{{- if .apiKeySecretKey -}}
{{- if not $.Values.auth.enabled -}}
{{- fail (printf "target %s: apiKeySecretKey needs auth.enabled" .name) -}}
{{- end -}}
{{- $hc := dict -}}
{{- if .http_client_config -}}
{{- $hc = deepCopy .http_client_config -}}
{{- end -}}
{{- $_ := set $t "http_client_config" (mergeOverwrite $hc (include "vllm-prober.authorization" (dict "root" $ "key" .apiKeySecretKey) | fromYaml)) -}}
{{- end -}}
{{- $targets = append $targets $t -}}
{{- end -}}
{{- end -}}
{{- toYaml $targets -}}
{{- end -}}

{{/* The targets of one shard (dict root, shard): a target belongs to shard
     adler32(name) mod shards, so adding a target never moves the others. */}}
{{- define "vllm-prober.shardTargets" -}}
{{- $all := include "vllm-prober.targets" .root | fromYamlArray -}}
{{- $shards := int .root.Values.shards -}}
{{- $sharded := include "vllm-prober.sharded" .root -}}
{{- $out := list -}}
{{- range $all -}}
{{- if or (not $sharded) (eq (mod (int64 (adler32sum .name)) $shards) (int64 $.shard)) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- if not $out -}}
{{- fail (printf "shard %d of %d has no targets: lower shards" (int .shard) $shards) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* The prober config file of one shard (dict root, shard). */}}
{{- define "vllm-prober.config" -}}
{{- $global := deepCopy .root.Values.global -}}
{{- if .root.Values.ledger.enabled -}}
{{- $ledger := default dict $global.ledger -}}
{{- $_ := set $ledger "path" "/var/lib/vllm-prober/ledger.jsonl" -}}
{{- $_ := set $global "ledger" $ledger -}}
{{- end -}}
global:
{{- toYaml $global | nindent 2 }}
targets:
{{- include "vllm-prober.shardTargets" . | nindent 2 }}
probes:
{{- toYaml .root.Values.probes | nindent 2 }}
{{- end -}}

{{/* "true" when the central prober is split into shards, else empty. */}}
{{- define "vllm-prober.sharded" -}}
{{- if and (eq .Values.mode "central") (gt (int .Values.shards) 1) -}}true{{- end -}}
{{- end -}}

{{/* The shard indexes to render: 0..shards-1 when sharded, else 0. */}}
{{- define "vllm-prober.shards" -}}
{{- if include "vllm-prober.sharded" . -}}
{{- toYaml (untilStep 0 (int .Values.shards) 1) -}}
{{- else -}}
[0]
{{- end -}}
{{- end -}}

{{/* Name of a shard's ConfigMap and Deployment (dict root, shard). */}}
{{- define "vllm-prober.shardName" -}}
{{- if include "vllm-prober.sharded" .root -}}
{{- printf "%s-shard-%d" (include "vllm-prober.fullname" .root) (int .shard) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- include "vllm-prober.fullname" .root -}}
{{- end -}}
{{- end -}}

{{/* The prober container, shared by both modes. */}}
{{- define "vllm-prober.container" -}}
- name: vllm-prober
  image: "{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}"
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - run
    - --config.file=/etc/vllm-prober/config/vllm-prober.yml
    - --web.listen-address=:{{ .Values.port }}
    - --log.level={{ .Values.logLevel }}
    - --log.format={{ .Values.logFormat }}
    {{- if .Values.enableLifecycle }}
    - --web.enable-lifecycle
    {{- end }}
    {{- range .Values.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  ports:
    - name: http-metrics
      containerPort: {{ .Values.port }}
      protocol: TCP
  livenessProbe:
    httpGet:
      path: /-/healthy
      port: http-metrics
    periodSeconds: 10
    failureThreshold: 3
  readinessProbe:
    httpGet:
      path: /-/ready
      port: http-metrics
    periodSeconds: 5
    failureThreshold: 3
  resources:
    {{- toYaml (ternary .Values.sidecarResources .Values.resources (eq .Values.mode "sidecar")) | nindent 4 }}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
    seccompProfile:
      type: RuntimeDefault
  volumeMounts:
    - name: prober-config
      mountPath: /etc/vllm-prober/config
      readOnly: true
    {{- if .Values.auth.enabled }}
    - name: api-keys
      mountPath: {{ include "vllm-prober.secretDir" . }}
      readOnly: true
    {{- end }}
    {{- if .Values.ledger.enabled }}
    - name: ledger
      mountPath: /var/lib/vllm-prober
    {{- end }}
{{- end -}}

{{/* The prober's volumes of one shard (dict root, shard). */}}
{{- define "vllm-prober.volumes" -}}
- name: prober-config
  configMap:
    name: {{ include "vllm-prober.shardName" . }}
{{- if .root.Values.auth.enabled }}
- name: api-keys
  secret:
    secretName: {{ include "vllm-prober.secretName" .root }}
    defaultMode: 0440
{{- end }}
{{- if .root.Values.ledger.enabled }}
- name: ledger
  emptyDir:
    sizeLimit: {{ .root.Values.ledger.sizeLimit }}
{{- end }}
{{- end -}}

{{/* Scheduling fields shared by both modes. */}}
{{- define "vllm-prober.scheduling" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}
