// Package deploy_test checks what can be checked here of the container
// image and the Helm chart, since no container engine and no helm binary
// run on these machines: the Dockerfile's build command, run as written,
// gives a static binary carrying its version; the image runs it as
// non-root with a data volume and a health check the binary answers; and
// the chart's templates render (with the subset of helm's functions they
// use) into the scale-out Deployment and Service.
package deploy_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v4"
)

// dockerfile is the Dockerfile's instructions, continuation lines joined.
func dockerfile(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont)
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

var (
	builtOnce sync.Once
	built     string
	buildErr  error
	buildOut  []byte
)

// buildAsDockerfile runs the build stage's `go build` as the Dockerfile
// writes it, with VERSION and COMMIT given and the output in a directory
// of the test's, from the module's root as the image's /src.
func buildAsDockerfile(t *testing.T) string {
	t.Helper()
	builtOnce.Do(func() {
		var cmd string
		for _, ins := range dockerfile(t) {
			if run, ok := strings.CutPrefix(ins, "RUN "); ok && strings.Contains(run, "go build") {
				cmd = run
			}
		}
		if cmd == "" {
			buildErr = os.ErrNotExist
			return
		}
		dir, err := os.MkdirTemp("", "engram-docker-build-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "engram")
		cmd = strings.ReplaceAll(cmd, "${VERSION}", "9.9.9-docker")
		cmd = strings.ReplaceAll(cmd, "${COMMIT}", "dockertest")
		cmd = strings.ReplaceAll(cmd, "-o /out/engram", "-o "+built)
		sh := exec.Command("sh", "-c", cmd)
		sh.Dir = ".."
		buildOut, buildErr = sh.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("the Dockerfile's go build: %v\n%s", buildErr, buildOut)
	}
	return built
}

func TestDockerfileBuildsAStaticBinary(t *testing.T) {
	bin := buildAsDockerfile(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader: it would not start on a static image")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v", libs)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "9.9.9-docker") || !strings.Contains(string(out), "dockertest") {
		t.Errorf("engram version: %v\n%s\nwant the version and commit the build arguments give", err, out)
	}
}

// TestDockerfileImage checks the image's shape: built in a stage of its
// own, run by a non-root user, the data dir a volume, the health check the
// binary's own (the static base has no shell and no curl), and the server
// listening beyond the container's loopback with its data in the volume.
func TestDockerfileImage(t *testing.T) {
	var stages int
	var user, volume, health, cmd string
	for _, ins := range dockerfile(t) {
		keyword, rest, _ := strings.Cut(ins, " ")
		switch keyword {
		case "FROM":
			stages++
			user = "" // a stage's USER is its own
		case "USER":
			user = rest
		case "VOLUME":
			volume = rest
		case "HEALTHCHECK":
			health = rest
		case "CMD":
			cmd = rest
		}
	}
	if stages < 2 {
		t.Errorf("%d stages, want a build stage and a run stage", stages)
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Errorf("the image runs as %q, want a non-root user", user)
	}
	if !strings.Contains(volume, `"/data"`) {
		t.Errorf("VOLUME %s, want /data", volume)
	}
	if !regexp.MustCompile(`CMD \["/engram", "healthcheck", "--url", "http://127\.0\.0\.1:8080/healthz"\]`).MatchString(health) {
		t.Errorf("HEALTHCHECK %s, want the binary's healthcheck of /healthz", health)
	}
	for _, want := range []string{`"--addr", "0.0.0.0:8080"`, `"--data-dir", "/data"`, `"--metrics-addr", "0.0.0.0:9464"`} {
		if !strings.Contains(cmd, want) {
			t.Errorf("CMD %s lacks %s", cmd, want)
		}
	}
}

// helmFuncs are the helm template functions the chart uses, with helm's
// meaning; include is added per template set.
func helmFuncs() template.FuncMap {
	return template.FuncMap{
		"toYaml": func(v any) string {
			out, err := yaml.Marshal(v)
			if err != nil {
				panic(err)
			}
			return strings.TrimSuffix(string(out), "\n")
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"quote": func(v any) string {
			return `"` + strings.ReplaceAll(stringOf(v), `"`, `\"`) + `"`
		},
		"default": func(def, v any) any {
			if v == nil || v == "" || v == 0 || v == false {
				return def
			}
			return v
		},
		"required": func(msg string, v any) (any, error) {
			if v == nil || v == "" {
				return nil, &requiredError{msg}
			}
			return v, nil
		},
		"trunc": func(n int, s string) string {
			if len(s) > n {
				return s[:n]
			}
			return s
		},
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
	}
}

type requiredError struct{ msg string }

func (e *requiredError) Error() string { return e.msg }

func stringOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	out, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(out))
}

// render renders the chart with its values.yaml, changed by override,
// and returns its manifests by kind.
func render(t *testing.T, override func(values map[string]any)) map[string]map[string]any {
	t.Helper()
	chart := map[string]any{}
	values := map[string]any{}
	for file, into := range map[string]map[string]any{"helm/engram/Chart.yaml": chart, "helm/engram/values.yaml": values} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, &into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if override != nil {
		override(values)
	}
	tpl := template.New("chart").Option("missingkey=error")
	tpl.Funcs(helmFuncs()).Funcs(template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var b strings.Builder
			err := tpl.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
	})
	files, err := filepath.Glob("helm/engram/templates/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tpl.New(filepath.Base(file)).Parse(string(raw)); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	data := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": "prod", "Namespace": "default"},
		"Chart":   map[string]any{"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
	}
	out := map[string]map[string]any{}
	for _, file := range files {
		name := filepath.Base(file)
		if strings.HasPrefix(name, "_") {
			continue
		}
		var b bytes.Buffer
		if err := tpl.ExecuteTemplate(&b, name, data); err != nil {
			t.Fatalf("render %s: %v", name, err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("%s renders to YAML that does not parse: %v\n%s", name, err, b.String())
		}
		kind, _ := doc["kind"].(string)
		if kind == "" || doc["apiVersion"] == nil {
			t.Fatalf("%s renders to no Kubernetes object:\n%s", name, b.String())
		}
		out[kind] = doc
	}
	return out
}

// at walks a manifest: keys of maps, indexes of lists.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map at %q", path, p)
			}
			v = m[p]
		case int:
			l, ok := v.([]any)
			if !ok || p >= len(l) {
				t.Fatalf("%v: no item %d", path, p)
			}
			v = l[p]
		}
	}
	return v
}

func TestHelmChartScaleOut(t *testing.T) {
	manifests := render(t, nil)
	deploy, svc := manifests["Deployment"], manifests["Service"]
	if deploy == nil || svc == nil {
		t.Fatalf("kinds rendered: %v, want a Deployment and a Service", manifests)
	}
	if replicas, _ := at(t, deploy, "spec", "replicas").(int); replicas < 2 {
		t.Errorf("replicas %v, want several", at(t, deploy, "spec", "replicas"))
	}
	container := at(t, deploy, "spec", "template", "spec", "containers", 0)
	var args []string
	for _, a := range at(t, container, "args").([]any) {
		args = append(args, a.(string))
	}
	for _, want := range []string{"serve", "--event-store=postgres", "--read-models=postgres", "--vector-index=qdrant", "--qdrant-url=http://qdrant:6334",
		"--keyword-index=meilisearch", "--meilisearch-url=http://meilisearch:7700", "--metrics-addr=0.0.0.0:9464", "--data-dir=/data", "--addr=0.0.0.0:8080"} {
		if !contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	// Every flag is one `engram serve` knows.
	help, err := exec.Command(buildAsDockerfile(t), "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, help)
	}
	for _, a := range args[1:] {
		name, _, _ := strings.Cut(a, "=")
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `( |$)`).Match(help) {
			t.Errorf("engram serve has no flag %s", name)
		}
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got := at(t, container, probe, "httpGet", "path"); got != path {
			t.Errorf("%s on %v, want %s", probe, got, path)
		}
	}
	if got := at(t, container, "envFrom", 0, "secretRef", "name"); got != "engram" {
		t.Errorf("secrets from %v, want the Secret named in values", got)
	}
	for _, e := range at(t, container, "env").([]any) {
		if name := at(t, e, "name").(string); strings.Contains(name, "PASSWORD") || strings.Contains(name, "KEY") || strings.Contains(name, "URL") && name != "ENGRAM_PUBLIC_URL" {
			t.Errorf("%s is set in the manifest; secrets come from the Secret only", name)
		}
	}
	ports := map[string]any{}
	for _, p := range at(t, container, "ports").([]any) {
		ports[at(t, p, "name").(string)] = at(t, p, "containerPort")
	}
	if ports["http"] != 8080 || ports["metrics"] != 9464 {
		t.Errorf("container ports %v, want http 8080 and metrics 9464", ports)
	}
	if at(t, deploy, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("the pod may run as root")
	}
	var svcPorts []string
	for _, p := range at(t, svc, "spec", "ports").([]any) {
		svcPorts = append(svcPorts, at(t, p, "name").(string))
	}
	if !contains(svcPorts, "http") || !contains(svcPorts, "metrics") {
		t.Errorf("service ports %v, want http and metrics", svcPorts)
	}

	off := render(t, func(v map[string]any) { v["metrics"].(map[string]any)["enabled"] = false })
	offArgs := at(t, off["Deployment"], "spec", "template", "spec", "containers", 0, "args").([]any)
	if !contains(anyStrings(offArgs), "--metrics-addr=") || len(at(t, off["Service"], "spec", "ports").([]any)) != 1 {
		t.Errorf("metrics.enabled=false: args %v, service ports %v; want metrics off and no metrics port", offArgs, at(t, off["Service"], "spec", "ports"))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func anyStrings(list []any) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i], _ = x.(string)
	}
	return out
}
