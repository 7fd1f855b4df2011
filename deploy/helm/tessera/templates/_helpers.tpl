{{/* Names and labels shared by every template. */}}

{{- define "tessera.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release name, unless it already contains the chart name ("tessera" for a release
     called tessera, as the plain manifests are rendered). */}}
{{- define "tessera.fullname" -}}
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

{{- define "tessera.labels" -}}
app.kubernetes.io/name: {{ include "tessera.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "tessera.schedulerSelector" -}}
app.kubernetes.io/name: {{ include "tessera.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end }}

{{- define "tessera.agentSelector" -}}
app.kubernetes.io/name: {{ include "tessera.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "tessera.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "tessera.agentName" -}}
{{- printf "%s-agent" (include "tessera.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tessera.tlsSecret" -}}
{{- default (printf "%s-tls" (include "tessera.fullname" .)) .Values.certificates.secretName }}
{{- end }}

{{/* The DNS name the certificate is issued to and the kube-scheduler verifies. */}}
{{- define "tessera.serviceHost" -}}
{{- printf "%s.%s.svc" (include "tessera.fullname" .) .Release.Namespace }}
{{- end }}

{{/* Fails the install while HAMi's device plugin DaemonSet would run on every node the agent
     selects (its nodeSelector is part of agent.nodeSelector, or it has none): two device
     plugins on one node. `lookup` sees nothing under `helm template`, so this guards
     install and upgrade only. agent.allowBesideHamiDevicePlugin=true skips it. */}}
{{- define "tessera.refuseBesideHamiDevicePlugin" -}}
{{- if not .Values.agent.allowBesideHamiDevicePlugin }}
{{- $agentSelector := .Values.agent.nodeSelector | default dict }}
{{- $daemonSets := lookup "apps/v1" "DaemonSet" "" "" }}
{{- range $ds := (get $daemonSets "items" | default list) }}
{{- $labels := $ds.metadata.labels | default dict }}
{{- if or (eq (get $labels "app.kubernetes.io/component" | toString) "hami-device-plugin") (hasSuffix "hami-device-plugin" $ds.metadata.name) }}
{{- $hamiSelector := $ds.spec.template.spec.nodeSelector | default dict }}
{{- $everyAgentNode := true }}
{{- range $key, $value := $hamiSelector }}
{{- if or (not (hasKey $agentSelector $key)) (ne (toString (get $agentSelector $key)) (toString $value)) }}
{{- $everyAgentNode = false }}
{{- end }}
{{- end }}
{{- if $everyAgentNode }}
{{- fail (printf "HAMi's device plugin DaemonSet %s/%s (nodeSelector %s) runs on every node that agent.nodeSelector (%s) selects: two device plugins on one node. Install with agent.enabled=false, or give the agent a label HAMi's DaemonSet does not select (the default, tessera.io/agent=true), or set agent.allowBesideHamiDevicePlugin=true (docs/migrating-from-hami.md)" $ds.metadata.namespace $ds.metadata.name (toJson $hamiSelector) (toJson $agentSelector)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
