{{/* Names: every object is <release>-<part>, or <release> alone when the release is "chatetl". */}}
{{- define "chatetl.fullname" -}}
{{- if eq .Release.Name .Chart.Name -}}{{ .Release.Name }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "chatetl.name" -}}
{{- printf "%s-%s" (include "chatetl.fullname" .root) .part | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "chatetl.labels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .part }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "chatetl.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .part }}
{{- end -}}

{{/* The chatetl image, pinned: a tag is required and `latest` is refused. */}}
{{- define "chatetl.image" -}}
{{- $tag := required "image.tag: pin the chatetl image's tag" .Values.image.tag | toString -}}
{{- if eq $tag "latest" }}{{ fail "image.tag: `latest` is not a pinned tag" }}{{ end -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}

{{- define "chatetl.serviceImage" -}}
{{- $tag := required (printf "%s: pin the image's tag" .what) .image.tag | toString -}}
{{- if eq $tag "latest" }}{{ fail (printf "%s: `latest` is not a pinned tag" .what) }}{{ end -}}
{{ .image.repository }}:{{ $tag }}
{{- end -}}

{{/* Where the services are: the deployed ones, or the external ones the values name. */}}
{{- define "chatetl.postgresqlHost" -}}
{{- if .Values.postgresql.deploy -}}{{ include "chatetl.name" (dict "root" . "part" "postgresql") }}
{{- else -}}{{ required "postgresql.host: name the external PostgreSQL (or postgresql.deploy: true)" .Values.postgresql.host }}{{- end -}}
{{- end -}}

{{- define "chatetl.neo4jUri" -}}
{{- if .Values.neo4j.deploy -}}bolt://{{ include "chatetl.name" (dict "root" . "part" "neo4j") }}:7687
{{- else -}}{{ required "neo4j.uri: name the external Neo4j, bolt:// or neo4j:// (or neo4j.deploy: true)" .Values.neo4j.uri }}{{- end -}}
{{- end -}}

{{- define "chatetl.s3EndpointUrl" -}}
{{- if .Values.s3.deploy -}}http://{{ include "chatetl.name" (dict "root" . "part" "s3") }}:8333
{{- else -}}{{ .Values.s3.endpointUrl }}{{- end -}}
{{- end -}}

{{/* The chatetl user of the image (deploy/Dockerfile). */}}
{{- define "chatetl.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "chatetl.securityContext" -}}
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* What every Dagster process of the image reads: settings, the instance's database password. */}}
{{- define "chatetl.dagsterEnv" -}}
envFrom:
  - configMapRef:
      name: {{ include "chatetl.name" (dict "root" . "part" "env") }}
  - secretRef:
      name: {{ .Values.secrets.neo4j }}
  - secretRef:
      name: {{ .Values.secrets.s3 }}
env:
  - name: DAGSTER_PG_PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ .Values.secrets.postgresql }}
        key: postgresql-password
{{- end -}}

{{- define "chatetl.instanceVolume" -}}
- name: dagster-instance
  configMap:
    name: {{ include "chatetl.name" (dict "root" . "part" "instance") }}
{{- end -}}

{{- define "chatetl.instanceMount" -}}
- name: dagster-instance
  mountPath: /opt/dagster/dagster_home/dagster.yaml
  subPath: dagster.yaml
{{- end -}}

{{/* An init container that waits until host:port accepts connections (the database first). */}}
{{- define "chatetl.waitFor" -}}
- name: wait-for-{{ .name }}
  image: {{ include "chatetl.image" .root }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  command:
    - python
    - -c
    - |
      import socket, sys, time
      host, port = sys.argv[1], int(sys.argv[2])
      while True:
          try:
              socket.create_connection((host, port), timeout=5).close()
              break
          except OSError as error:
              print(f"waiting for {host}:{port}: {error}", flush=True)
              time.sleep(3)
    - {{ .host | quote }}
    - {{ .port | quote }}
  securityContext:
    {{- include "chatetl.securityContext" .root | nindent 4 }}
  resources:
    requests: {cpu: 10m, memory: 32Mi}
    limits: {memory: 64Mi}
{{- end -}}
