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

{{/* The metrics Service's name; the ServiceMonitor verifies <it>.<namespace>.svc. */}}
{{- define "metawatch.metricsServiceName" -}}
{{- printf "%s-metrics" (include "metawatch.fullname" .) }}
{{- end }}

{{/*
The Secret whose certificate the metrics endpoint serves: metrics.tls.secretName,
or the one cert-manager issues into; empty for the self-signed certificate.
Contradictory values fail here, so every template that asks agrees.
*/}}
{{- define "metawatch.metricsTLSSecret" -}}
{{- $tls := .Values.metrics.tls }}
{{- if and $tls.secretName $tls.certManager.enabled }}
{{- fail "metrics.tls.secretName and metrics.tls.certManager.enabled exclude each other: set secretName to serve a Secret you provide, or certManager.enabled to have cert-manager issue one" }}
{{- end }}
{{- if and $tls.certManager.enabled (not $tls.certManager.issuerRef.name) }}
{{- fail "metrics.tls.certManager.enabled needs metrics.tls.certManager.issuerRef.name: the Issuer in the release namespace (or, with issuerRef.kind=ClusterIssuer, the ClusterIssuer) that signs the metrics certificate" }}
{{- end }}
{{- $secret := $tls.secretName }}
{{- if $tls.certManager.enabled }}
{{- $secret = printf "%s-metrics-tls" (include "metawatch.fullname" .) }}
{{- end }}
{{- if and $secret (not .Values.metrics.secure) }}
{{- fail "metrics.tls needs metrics.secure: plain HTTP serves no certificate; drop metrics.secure=false, or unset metrics.tls.secretName and metrics.tls.certManager.enabled" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.caSecret.name (not $secret) }}
{{- fail "metrics.serviceMonitor.caSecret.name needs metrics.tls.secretName or metrics.tls.certManager.enabled: without them metawatch serves a self-signed certificate, which no CA verifies" }}
{{- end }}
{{- $secret }}
{{- end }}

{{/*
The kinds rules may write (--writable-kinds): those of rbac.kinds with write: true, as
Kind.apiGroup outside the core group (Deployment.apps), so that a custom resource called like a
built-in kind is never allowed by the built-in's entry, nor the other way round.
*/}}
{{- define "metawatch.writableKinds" -}}
{{- $kinds := list }}
{{- range .Values.rbac.kinds }}{{ if .write }}{{ $kinds = append $kinds (ternary (printf "%s.%s" .kind .apiGroup) .kind (ne (.apiGroup | default "") "")) }}{{ end }}{{ end }}
{{- join "," $kinds }}
{{- end }}

{{/*
Values of chart 0.1.0 that 0.2.0 removed stop the rendering by name, with
the fix: rbac.watch and rbac.patch listed API groups and resources, and
rbac.kinds lists kinds, which a template cannot tell from a resource name.
A guess could grant what the operator did not review.
*/}}
{{- define "metawatch.refuseRemovedValues" -}}
{{- if or (hasKey .Values.rbac "watch") (hasKey .Values.rbac "patch") }}
{{- fail "rbac.watch and rbac.patch (chart 0.1.0) are replaced by rbac.kinds, one entry per kind: {kind, apiGroup, resource, write}. Drop them from your values and list the kinds your configuration needs: metawatch check -f config.yaml --kubeconfig K --chart-values kinds.yaml writes that list, then helm upgrade ... -f kinds.yaml (CHANGELOG: Upgrading from 0.1.0)" }}
{{- end }}
{{- end }}

{{/*
The server-side apply field manager the rules write as (--field-manager):
fieldManager as given; empty, derived. On an upgrade the derived name is the
one the release's running Deployment passes (metawatch, the binary's default,
if it passes none: a Deployment of an older chart), so an installation keeps
the keys it owns; on a new install, and wherever lookup sees no cluster (helm
template, --dry-run=client), metawatch/<namespace>/<release>: unique in the
cluster (a release name is unique in its namespace) and at most
10 + 63 + 1 + 53 = 127 characters, within the API server's 128. When
adoptFieldManager names the running one, the upgrade renames the
installation to the per-release name, which adopts the old one's keys.
*/}}
{{- define "metawatch.fieldManager" -}}
{{- $adopt := .Values.adoptFieldManager | default "" }}
{{- $fieldManager := .Values.fieldManager | default "" }}
{{- if not $fieldManager }}
{{- $fieldManager = include "metawatch.runningFieldManager" . }}
{{- if or (not $fieldManager) (eq $fieldManager $adopt) }}
{{- $fieldManager = printf "metawatch/%s/%s" .Release.Namespace .Release.Name }}
{{- end }}
{{- end }}
{{- if eq $fieldManager $adopt }}
{{- fail (printf "adoptFieldManager %q is the field manager this installation writes as (fieldManager): name the one it wrote as before the change, or leave adoptFieldManager empty" $adopt) }}
{{- end }}
{{- $fieldManager }}
{{- end }}

{{/*
The --field-manager the release's running Deployment passes (the last one,
as the binary reads its flags), metawatch if it passes none, or empty when
lookup finds no Deployment of this release: on a new install, and with helm
template or --dry-run=client, which see no cluster. The Deployment is the
one named <fullname> of those Helm's ownership annotation gives to this
release and that run a metawatch container, else the first other such one:
a nameOverride or fullnameOverride changed in the upgrade keeps the name too.
*/}}
{{- define "metawatch.runningFieldManager" -}}
{{- $release := .Release.Name }}
{{- $fullname := include "metawatch.fullname" . }}
{{- $exact := "" }}
{{- $other := "" }}
{{- range dig "items" list (lookup "apps/v1" "Deployment" .Release.Namespace "") }}
{{- if eq (dig "metadata" "annotations" "meta.helm.sh/release-name" "" .) $release }}
{{- $name := dig "metadata" "name" "" . }}
{{- range dig "spec" "template" "spec" "containers" list . }}
{{- if eq (dig "name" "" .) "metawatch" }}
{{- $fieldManager := "metawatch" }}
{{- $previous := "" }}
{{- range dig "args" list . }}
{{- if hasPrefix "--field-manager=" . }}
{{- $fieldManager = trimPrefix "--field-manager=" . }}
{{- else if eq $previous "--field-manager" }}
{{- $fieldManager = . }}
{{- end }}
{{- $previous = . }}
{{- end }}
{{- if eq $name $fullname }}
{{- $exact = $fieldManager }}
{{- else if not $other }}
{{- $other = $fieldManager }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- $exact | default $other }}
{{- end }}

{{/*
The ConfigMap where the removal brake keeps its count (--removal-brake-record):
beside the selectors ConfigMap, named after it, as the binary's default is.
*/}}
{{- define "metawatch.brakeRecordName" -}}
{{- printf "%s-removal-brake" .Values.selectors.name }}
{{- end }}

{{/*
The container's resources: .Values.resources, with the memory request and
limit computed from sizing.expectedObjects when it is set. The arithmetic is
pkg/sizing's (For), in integers: a base and a cost per object, steady and at
the peak of a list, the limit a quarter over the peak; a test holds the two
equal.
*/}}
{{- define "metawatch.resources" -}}
{{- $r := deepCopy (.Values.resources | default dict) -}}
{{- $n := int64 (.Values.sizing.expectedObjects | default 0) -}}
{{- if gt $n 0 -}}
{{- $mib := 1048576 -}}
{{- $steady := add 64 (div (sub (add (mul $n 512) $mib) 1) $mib) -}}
{{- $peak := add 64 (div (sub (add (mul $n 1000) $mib) 1) $mib) -}}
{{- $request := max 64 (mul (div (add $steady 15) 16) 16) -}}
{{- $limit := max 256 (mul (div (add (div (add (mul $peak 125) 99) 100) 63) 64) 64) -}}
{{- $_ := set $r "requests" (merge (dict "memory" (printf "%dMi" $request)) ($r.requests | default dict)) -}}
{{- $_ := set $r "limits" (merge (dict "memory" (printf "%dMi" $limit)) ($r.limits | default dict)) -}}
{{- end -}}
{{- toYaml $r -}}
{{- end -}}
