{{/* The chart's name. */}}
{{- define "devpilot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every resource's name: the release's, with the chart's name unless it has it. */}}
{{- define "devpilot.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "devpilot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "devpilot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "devpilot.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: devpilot
{{- end }}

{{/* Selector labels of one component: include with (dict "ctx" $ "component" "serve"). */}}
{{- define "devpilot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "devpilot.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "devpilot.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "devpilot.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "devpilot.tag" .) }}
{{- end }}

{{- define "devpilot.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "devpilot.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret the pods read their secret settings from. */}}
{{- define "devpilot.secretName" -}}
{{- default (include "devpilot.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* terminationGracePeriodSeconds: the drain delay, the shutdown grace and a margin. */}}
{{- define "devpilot.terminationGracePeriodSeconds" -}}
{{- add .Values.preStopSleepSeconds .Values.config.shutdownGraceSeconds .Values.terminationMarginSeconds }}
{{- end }}

{{/*
The ConfigMap's data: the non-secret settings. A name under config.env that
looks like a secret fails the render, naming it, rather than landing in a
ConfigMap.
*/}}
{{- define "devpilot.configData" -}}
{{- $c := .Values.config }}
{{- $env := dict "DEVPILOT_SHUTDOWN_GRACE" (printf "%ds" (int $c.shutdownGraceSeconds)) "DEVPILOT_LOG_LEVEL" $c.logLevel "DEVPILOT_LOG_FORMAT" $c.logFormat "DEVPILOT_HTTP_ADDR" ":8080" "DEVPILOT_WORKER_ADDR" (printf ":%d" (int .Values.worker.metricsPort)) }}
{{- with $c.publicURL }}{{ $_ := set $env "DEVPILOT_PUBLIC_URL" . }}{{ end }}
{{- with $c.otlpEndpoint }}{{ $_ := set $env "OTEL_EXPORTER_OTLP_ENDPOINT" . }}{{ end }}
{{- range $k, $v := $c.env }}
{{- if or (regexMatch "(_SECRET|_KEY|_PASSWORD|_TOKEN|_CREDENTIALS)$" $k) (has $k (list "DEVPILOT_DATABASE_URL" "OTEL_EXPORTER_OTLP_HEADERS" "AWS_ACCESS_KEY_ID")) }}
{{- fail (printf "config.env.%s looks like a secret: set it under secrets (secrets.extra.%s, or in secrets.existingSecret), which go into a Secret, not a ConfigMap" $k $k) }}
{{- end }}
{{- $_ := set $env $k (toString $v) }}
{{- end }}
{{- range $k := keys $env | sortAlpha }}
{{ $k }}: {{ get $env $k | quote }}
{{- end }}
{{- end }}

{{/* The Secret's data (when the chart makes the Secret): only the settings given. */}}
{{- define "devpilot.secretData" -}}
{{- $s := .Values.secrets }}
{{- $key := $s.secretKey }}
{{- if not $key }}
{{- $old := lookup "v1" "Secret" .Release.Namespace (include "devpilot.fullname" .) }}
{{- if and $old $old.data (hasKey $old.data "DEVPILOT_SECRET_KEY") }}
{{- $key = index $old.data "DEVPILOT_SECRET_KEY" | b64dec }}
{{- else }}
{{- $key = randBytes 32 }}
{{- end }}
{{- end }}
{{- $env := dict "DEVPILOT_SECRET_KEY" $key }}
{{- with $s.databaseURL }}{{ $_ := set $env "DEVPILOT_DATABASE_URL" . }}{{ end }}
{{- with $s.openaiAPIKey }}{{ $_ := set $env "OPENAI_API_KEY" . }}{{ end }}
{{- with $s.githubClientSecret }}{{ $_ := set $env "GITHUB_CLIENT_SECRET" . }}{{ end }}
{{- with $s.githubWebhookSecret }}{{ $_ := set $env "GITHUB_WEBHOOK_SECRET" . }}{{ end }}
{{- with $s.oidcClientSecret }}{{ $_ := set $env "DEVPILOT_OIDC_CLIENT_SECRET" . }}{{ end }}
{{- with $s.awsAccessKeyID }}{{ $_ := set $env "AWS_ACCESS_KEY_ID" . }}{{ end }}
{{- with $s.awsSecretAccessKey }}{{ $_ := set $env "AWS_SECRET_ACCESS_KEY" . }}{{ end }}
{{- with $s.otlpHeaders }}{{ $_ := set $env "OTEL_EXPORTER_OTLP_HEADERS" . }}{{ end }}
{{- range $k, $v := $s.extra }}{{ $_ := set $env $k (toString $v) }}{{ end }}
{{- range $k := keys $env | sortAlpha }}
{{ $k }}: {{ get $env $k | b64enc | quote }}
{{- end }}
{{- end }}

{{/* Pod settings shared by serve and worker: include with (dict "ctx" $ "component" "serve" "c" .Values.serve). */}}
{{- define "devpilot.podCommon" -}}
{{- $ := .ctx }}
serviceAccountName: {{ include "devpilot.serviceAccountName" $ }}
automountServiceAccountToken: false
terminationGracePeriodSeconds: {{ include "devpilot.terminationGracePeriodSeconds" $ }}
securityContext:
  {{- toYaml $.Values.podSecurityContext | nindent 2 }}
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .c.affinity }}
affinity:
  {{- toYaml .c.affinity | nindent 2 }}
{{- else }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "devpilot.selectorLabels" (dict "ctx" $ "component" .component) | nindent 14 }}
{{- end }}
{{- with .c.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  # The root filesystem is read-only. The image's TMPDIR is /data (uploads
  # and webhook payloads spill there); serve and worker keep nothing else on
  # it with PostgreSQL: scratch space only.
  - name: data
    emptyDir:
      sizeLimit: 512Mi
  - name: tmp
    emptyDir:
      sizeLimit: 64Mi
{{- end }}

{{/* The container settings shared by serve and worker: include with (dict "ctx" $ "c" .Values.serve "port" "http"). */}}
{{- define "devpilot.containerCommon" -}}
{{- $ := .ctx }}
image: {{ include "devpilot.image" $ }}
{{- with $.Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
envFrom:
  - configMapRef:
      name: {{ include "devpilot.fullname" $ }}
  - secretRef:
      name: {{ include "devpilot.secretName" $ }}
# The two required settings again, by key: a Secret without them stops the
# pod with an event naming the key (CreateContainerConfigError), rather than
# letting serve fall back to an SQLite file of its own.
env:
  {{- range list "DEVPILOT_DATABASE_URL" "DEVPILOT_SECRET_KEY" }}
  - name: {{ . }}
    valueFrom:
      secretKeyRef:
        name: {{ include "devpilot.secretName" $ }}
        key: {{ . }}
  {{- end }}
securityContext:
  {{- toYaml $.Values.securityContext | nindent 2 }}
volumeMounts:
  - name: data
    mountPath: /data
  - name: tmp
    mountPath: /tmp
resources:
  {{- toYaml .c.resources | nindent 2 }}
startupProbe:
  httpGet:
    path: /livez
    port: {{ .port }}
  {{- toYaml .c.startupProbe | nindent 2 }}
livenessProbe:
  httpGet:
    path: /livez
    port: {{ .port }}
  {{- toYaml .c.livenessProbe | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .port }}
  {{- toYaml .c.readinessProbe | nindent 2 }}
lifecycle:
  # Keep serving while endpoints and load balancers forget the pod; then
  # SIGTERM starts the DEVPILOT_SHUTDOWN_GRACE drain. (The image has no shell:
  # the sleep action, not an exec of sleep.)
  preStop:
    sleep:
      seconds: {{ $.Values.preStopSleepSeconds }}
{{- end }}
