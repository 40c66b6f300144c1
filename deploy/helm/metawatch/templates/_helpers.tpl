{{/* The chart name, or nameOverride. */}}
{{- define "metawatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: fullnameOverride, or release-chart (just release if it contains the chart name). */}}
{{- define "metawatch.fullname" -}}
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

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "metawatch.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "metawatch.labels" -}}
helm.sh/chart: {{ include "metawatch.chart" . }}
{{ include "metawatch.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the pods; never change them in an upgrade. */}}
{{- define "metawatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "metawatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount's name. */}}
{{- define "metawatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "metawatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The leader-election Lease's name. */}}
{{- define "metawatch.leaseName" -}}
{{- printf "%s-leader" (include "metawatch.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The image reference. */}}
{{- define "metawatch.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The sharding ring's name: its Leases are <ring>-member-<pod> and <ring>-bucket-NN.
*/}}
{{- define "metawatch.ringName" -}}
{{- .Values.sharding.ring | default (include "metawatch.fullname" . | trunc 40 | trimSuffix "-") }}
{{- end }}

{{/*
The PodDisruptionBudget's minAvailable: as set; else 1, or with sharding a
majority of the replicas, capped at replicas - 1 so that a drain can proceed
(0 for a single replica).
*/}}
{{- define "metawatch.minAvailable" -}}
{{- if ne (toString .Values.podDisruptionBudget.minAvailable) "" }}
{{- .Values.podDisruptionBudget.minAvailable }}
{{- else if .Values.sharding.enabled }}
{{- min (add (div (int .Values.replicaCount) 2) 1) (sub (int .Values.replicaCount) 1) }}
{{- else }}
{{- 1 }}
{{- end }}
{{- end }}
