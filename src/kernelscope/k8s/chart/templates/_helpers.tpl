{{- define "sister.labels" -}}
app.kubernetes.io/name: kernelscope-sister
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
