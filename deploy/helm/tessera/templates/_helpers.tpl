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
