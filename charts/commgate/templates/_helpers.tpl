{{/* Names, labels and the security settings every commgate pod shares. */}}

{{- define "commgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object name: the release name, with the chart name unless it is already in it. */}}
{{- define "commgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "commgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "commgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: commgate
{{- end -}}

{{/* Selector labels of one component: include "commgate.selectorLabels" (list . "webhook") */}}
{{- define "commgate.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "commgate.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "commgate.webhook.name" -}}
{{- printf "%s-webhook" (include "commgate.fullname" .) -}}
{{- end -}}

{{- define "commgate.webhook.tlsSecretName" -}}
{{- printf "%s-webhook-tls" (include "commgate.fullname" .) -}}
{{- end -}}

{{/* The names the webhook's serving certificate must hold (the API server calls <service>.<namespace>.svc). */}}
{{- define "commgate.webhook.dnsNames" -}}
{{- $svc := include "commgate.webhook.name" . -}}
{{- list $svc (printf "%s.%s" $svc .Release.Namespace) (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) | toJson -}}
{{- end -}}

{{/*
A chart-generated CA and serving certificate (the webhook's, the operator's), as JSON:
caCrt, tlsCrt, tlsKey (base64), caBundle (base64 PEM, what clients trust) and renewAfter
(Unix seconds, "" when unknown). On install they are generated, valid
selfSignedCertificate.validityDays. On upgrade the Secret that lookup finds is kept until
its annotation commgate.io/renew-after (two thirds into the validity; a Secret from a
chart before it is kept), then generated again, and the caBundle holds the new CA and the
old one: the API server keeps accepting the old certificate until the pods have reloaded
the new one from the Secret (the kubelet updates mounted Secrets within about a minute).
Arguments: dict "root" . "secretName" NAME "caName" CN "dnsNames" LIST.
*/}}
{{- define "commgate.selfSignedTLS" -}}
{{- $root := .root -}}
{{- $existing := lookup "v1" "Secret" $root.Release.Namespace .secretName | default dict -}}
{{- $data := get $existing "data" | default dict -}}
{{- $annotations := get (get $existing "metadata" | default dict) "annotations" | default dict -}}
{{- $renewAfter := get $annotations "commgate.io/renew-after" -}}
{{- $now := now | unixEpoch | int64 -}}
{{- $complete := and (get $data "ca.crt") (get $data "tls.crt") (get $data "tls.key") -}}
{{- if and $complete (or (not $renewAfter) (lt $now (int64 $renewAfter))) -}}
{{- dict "caCrt" (get $data "ca.crt") "tlsCrt" (get $data "tls.crt") "tlsKey" (get $data "tls.key") "caBundle" (get $data "ca.crt") "renewAfter" $renewAfter | toJson -}}
{{- else -}}
{{- $days := int $root.Values.selfSignedCertificate.validityDays -}}
{{- $ca := genCA .caName $days -}}
{{- $cert := genSignedCert (index .dnsNames 2) nil .dnsNames $days $ca -}}
{{- $bundle := $ca.Cert -}}
{{- if $complete -}}{{- $bundle = printf "%s%s" $ca.Cert (get $data "ca.crt" | b64dec) -}}{{- end -}}
{{- dict "caCrt" ($ca.Cert | b64enc) "tlsCrt" ($cert.Cert | b64enc) "tlsKey" ($cert.Key | b64enc) "caBundle" ($bundle | b64enc) "renewAfter" (toString (add $now (div (mul $days 86400 2) 3))) | toJson -}}
{{- end -}}
{{- end -}}

{{/* The operator's ServiceAccount, Deployment, RBAC and leader-election Lease share this name. */}}
{{- define "commgate.operator.name" -}}
{{- printf "%s-operator" (include "commgate.fullname" .) -}}
{{- end -}}

{{/* The operator's leader-election Lease, in the release namespace. The name is the
operator's own (operator/operator_process.h, OperatorOptions::lease_name; it has no flag),
so it does not follow the release name; tests/chart checks the two agree. */}}
{{- define "commgate.operator.leaseName" -}}
commgate-operator
{{- end -}}

{{/* The key that signs decision records, mounted by the webhook and the operator only. */}}
{{- define "commgate.decisionKeySecretName" -}}
{{- printf "%s-decision-key" (include "commgate.fullname" .) -}}
{{- end -}}

{{- define "commgate.operator.tlsSecretName" -}}
{{- .Values.operator.tls.existingSecret | default (printf "%s-operator-tls" (include "commgate.fullname" .)) -}}
{{- end -}}

{{- define "commgate.operator.metricsName" -}}
{{- printf "%s-operator-metrics" (include "commgate.fullname" .) -}}
{{- end -}}

{{/* The names the operator's health/metrics certificate holds (scrapers call its metrics Service). */}}
{{- define "commgate.operator.dnsNames" -}}
{{- $svc := include "commgate.operator.metricsName" . -}}
{{- list $svc (printf "%s.%s" $svc .Release.Namespace) (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) | toJson -}}
{{- end -}}

{{/* The operator's user name: its ServiceAccount's, which the webhook lets through its checks (the operator's own spec patches). */}}
{{- define "commgate.operator.username" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "commgate.operator.name" .) -}}
{{- end -}}

{{- define "commgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The probe image the operator runs (--probe-image): probe.image, else image.probeRepository (empty: image.repository + "-probe") at the chart's tag. A CommPolicy's spec.probe.image still wins per policy. */}}
{{- define "commgate.probeImage" -}}
{{- $repository := .Values.image.probeRepository | default (printf "%s-probe" .Values.image.repository) -}}
{{- .Values.probe.image | default (printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag)) -}}
{{- end -}}

{{/* Pod Security "restricted": the pod's part. */}}
{{- define "commgate.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
# The group the kubelet gives the mounted TLS Secret's files (mode 0440).
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Pod Security "restricted": each container's part, with a read-only root filesystem. */}}
{{- define "commgate.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The webhook configurations' namespaceSelector: never kube-system or the release namespace. */}}
{{- define "commgate.webhook.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ concat (list "kube-system" .Release.Namespace) (.Values.webhook.excludeNamespaces | default list) | uniq | toJson }}
{{- end -}}

{{/* The clientConfig of one webhook: include "commgate.webhook.clientConfig" (dict "root" . "path" "/mutate" "caBundle" $ca) */}}
{{- define "commgate.webhook.clientConfig" -}}
service:
  name: {{ include "commgate.webhook.name" .root }}
  namespace: {{ .root.Release.Namespace }}
  path: {{ .path }}
  port: 443
{{- if .caBundle }}
caBundle: {{ .caBundle }}
{{- end }}
{{- end -}}
