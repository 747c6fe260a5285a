{{- define "engram.fullname" -}}
{{- printf "%s-engram" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "engram.labels" -}}
app.kubernetes.io/name: engram
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "engram.selectorLabels" -}}
app.kubernetes.io/name: engram
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
