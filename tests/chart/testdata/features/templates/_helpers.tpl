{{- define "features.block" -}}
greeting: {{ .Values.greeting }}
list:
  - a
  - b
{{- end -}}
