// chart-render: renders a Helm chart as `helm template` does, for tests on machines with
// no helm binary (docs/install.md, "How the chart is tested"). It implements what
// charts/commgate uses of Helm 3's template engine, the way Helm implements it, and
// refuses the rest with a message that names the feature:
//
//   - the chart: Chart.yaml (apiVersion v2 only; kubeVersion checked against the
//     Kubernetes version, as Helm does), values.yaml, values.schema.json, templates/
//     (files starting with "_" define templates and print nothing), templates/NOTES.txt,
//     crds/ (printed first with --include-crds, never templated), every other file as
//     .Files (Get, GetBytes, Lines);
//   - values: values.yaml, then -f files (later wins, maps merged), then --set and
//     --set-string (dotted keys; ints, booleans and null typed as Helm's strvals does),
//     coalesced with Helm's rules (a null removes a default), then validated against
//     values.schema.json with the same library and message format as Helm 3;
//   - objects: .Values, .Release (Name, Namespace, Service, Revision, IsInstall,
//     IsUpgrade), .Chart (Chart.yaml's fields, capitalised), .Capabilities (KubeVersion
//     with Version/Major/Minor/GitVersion, APIVersions.Has), .Template (Name, BasePath),
//     .Files;
//   - functions: sprig's text functions without env and expandenv (as in Helm), toYaml,
//     mustToYaml, fromYaml, fromYamlArray, toJson, mustToJson, fromJson, fromJsonArray,
//     include, tpl, required, fail, and lookup, which returns an empty map as it does
//     under `helm template`, or, with --lookup FILE, the object of FILE's documents that
//     matches (a List of them for an empty name), as `helm upgrade` finds the cluster's;
//   - output: "missingkey=zero" and "<no value>" removed as Helm does; each rendered file
//     split into documents, each parsed (a YAML error names the template), and sorted
//     by Helm's install order of kinds, each under "# Source: <chart>/<path>".
//
// Refused, each with an error: subcharts and dependencies, hooks (helm.sh/hook),
// toToml, .Files.Glob/AsConfig/AsSecrets, list indexes and braces in --set, Chart.yaml
// apiVersion v1, .helmignore.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	"github.com/Masterminds/sprig"
	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type options struct {
	chartDir    string
	releaseName string
	namespace   string
	valueFiles  stringList
	sets        stringList
	setStrings  stringList
	kubeVersion string
	apiVersions stringList
	includeCRDs bool
	isUpgrade   bool
	notesOut    string
	valuesOut   string
	lookupFile  string
}

// The objects `lookup` finds (--lookup): none by default, as under `helm template`.
var lookupObjects []map[string]interface{}

func main() {
	var o options
	flag.StringVar(&o.chartDir, "chart", "", "the chart's directory")
	flag.StringVar(&o.releaseName, "name", "commgate", "the release name")
	flag.StringVar(&o.namespace, "namespace", "default", "the release namespace")
	flag.Var(&o.valueFiles, "f", "a values file (repeatable; later files win)")
	flag.Var(&o.sets, "set", "key=value[,key=value] (repeatable)")
	flag.Var(&o.setStrings, "set-string", "key=value, always a string (repeatable)")
	flag.StringVar(&o.kubeVersion, "kube-version", "v1.32.0", "the Kubernetes version for .Capabilities")
	flag.Var(&o.apiVersions, "api-versions", "an extra API version for .Capabilities (repeatable)")
	flag.BoolVar(&o.includeCRDs, "include-crds", false, "print crds/ first")
	flag.BoolVar(&o.isUpgrade, "is-upgrade", false, ".Release.IsUpgrade instead of IsInstall")
	flag.StringVar(&o.notesOut, "notes-out", "", "write the rendered NOTES.txt here")
	flag.StringVar(&o.valuesOut, "values-out", "", "write the final values (JSON) here")
	flag.StringVar(&o.lookupFile, "lookup", "", "objects (YAML documents) that lookup finds, as on a cluster")
	flag.Parse()
	if o.chartDir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "Usage: chart-render --chart DIR [--name N] [--namespace NS] [-f FILE]... [--set K=V]... [--set-string K=V]... [--kube-version V] [--api-versions GV]... [--include-crds] [--is-upgrade] [--notes-out FILE] [--values-out FILE] [--lookup FILE]")
		os.Exit(2)
	}
	if o.lookupFile != "" {
		objects, err := readObjects(o.lookupFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: --lookup: %s\n", err)
			os.Exit(1)
		}
		lookupObjects = objects
	}
	out, err := run(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %s\n", strings.TrimRight(err.Error(), "\n"))
		os.Exit(1)
	}
	os.Stdout.WriteString(out)
}

// ---- the chart ----

type chart struct {
	metadata  map[string]interface{} // Chart.yaml as read
	name      string
	templates map[string]string // "templates/x.yaml" -> text
	crds      []string          // "crds/x.yaml", sorted
	files     map[string][]byte // everything else, by chart-relative path
	values    map[string]interface{}
	schema    []byte
}

func loadChart(dir string) (*chart, error) {
	c := &chart{templates: map[string]string{}, files: map[string][]byte{}}
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, fmt.Errorf("cannot read the chart: %v", err)
	}
	if err := yaml.Unmarshal(raw, &c.metadata); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if v, _ := c.metadata["apiVersion"].(string); v != "v2" {
		return nil, fmt.Errorf("Chart.yaml: apiVersion %q is not supported by this renderer (v2 only)", v)
	}
	c.name, _ = c.metadata["name"].(string)
	if c.name == "" {
		return nil, errors.New("Chart.yaml: name is required")
	}
	if _, ok := c.metadata["version"].(string); !ok {
		return nil, errors.New("Chart.yaml: version is required")
	}
	if deps, ok := c.metadata["dependencies"]; ok && deps != nil {
		return nil, errors.New("Chart.yaml: dependencies (subcharts) are not supported by this renderer")
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "charts" {
				return errors.New("charts/: subcharts are not supported by this renderer")
			}
			return nil
		}
		if rel == ".helmignore" {
			return errors.New(".helmignore is not supported by this renderer")
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case rel == "Chart.yaml":
		case rel == "values.yaml":
			if err := yaml.Unmarshal(data, &c.values); err != nil {
				return fmt.Errorf("values.yaml: %v", err)
			}
		case rel == "values.schema.json":
			c.schema = data
		case strings.HasPrefix(rel, "templates/"):
			c.templates[rel] = string(data)
		default:
			if strings.HasPrefix(rel, "crds/") {
				c.crds = append(c.crds, rel)
			}
			c.files[rel] = data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c.values == nil {
		c.values = map[string]interface{}{}
	}
	sort.Strings(c.crds)
	return c, nil
}

// chartObject is .Chart: Chart.yaml's keys with the first letter capitalised, as Helm's
// chart.Metadata fields are named (apiVersion -> APIVersion, appVersion -> AppVersion).
func chartObject(m map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range m {
		name := strings.ToUpper(k[:1]) + k[1:]
		if k == "apiVersion" {
			name = "APIVersion"
		}
		out[name] = v
	}
	return out
}

// ---- values ----

// coalesce fills `user` with the defaults it lacks, as Helm's chartutil.CoalesceValues:
// maps merge key by key, any other user value wins, and a user null removes the key.
func coalesce(user, defaults map[string]interface{}) map[string]interface{} {
	if user == nil {
		user = map[string]interface{}{}
	}
	for k, dv := range defaults {
		uv, present := user[k]
		if !present {
			user[k] = deepCopy(dv)
			continue
		}
		um, uIsMap := uv.(map[string]interface{})
		dm, dIsMap := dv.(map[string]interface{})
		if uIsMap && dIsMap {
			user[k] = coalesce(um, dm)
		}
	}
	removeNulls(user)
	return user
}

func removeNulls(m map[string]interface{}) {
	for k, v := range m {
		if v == nil {
			delete(m, k)
		} else if sub, ok := v.(map[string]interface{}); ok {
			removeNulls(sub)
		}
	}
}

func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}

// mergeMaps merges b into a (b wins; maps merged), as Helm merges -f files.
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if am, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeMaps(am, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// splitUnescaped splits s on sep not preceded by a backslash, and unescapes "\<sep>".
func splitUnescaped(s string, sep byte) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == sep {
			cur.WriteByte(sep)
			i++
			continue
		}
		if s[i] == sep {
			parts = append(parts, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(s[i])
	}
	return append(parts, cur.String())
}

// typedValue types a --set value as Helm's strvals does: true/false, null, integers
// (no leading zero) as int64, everything else a string.
func typedValue(v string) interface{} {
	switch v {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if v != "0" && strings.HasPrefix(v, "0") {
		return v
	}
	if i, err := strconv.ParseInt(v, 10, 64); err == nil {
		return i
	}
	return v
}

func applySet(values map[string]interface{}, expr string, asString bool) error {
	for _, pair := range splitUnescaped(expr, ',') {
		eq := strings.IndexByte(pair, '=')
		if eq <= 0 {
			return fmt.Errorf("failed parsing --set data: key %q has no value", pair)
		}
		key, raw := pair[:eq], pair[eq+1:]
		if strings.ContainsAny(key, "[]") {
			return fmt.Errorf("--set %s: list indexes are not supported by this renderer (use -f)", key)
		}
		if strings.HasPrefix(raw, "{") {
			return fmt.Errorf("--set %s: {a,b} lists are not supported by this renderer (use -f)", key)
		}
		var val interface{} = raw
		if !asString {
			val = typedValue(raw)
		}
		path := splitUnescaped(key, '.')
		m := values
		for _, k := range path[:len(path)-1] {
			next, ok := m[k].(map[string]interface{})
			if !ok {
				next = map[string]interface{}{}
				m[k] = next
			}
			m = next
		}
		m[path[len(path)-1]] = val
	}
	return nil
}

func userValues(o options) (map[string]interface{}, error) {
	user := map[string]interface{}{}
	for _, f := range o.valueFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var m map[string]interface{}
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("failed to parse %s: %v", f, err)
		}
		user = mergeMaps(user, m)
	}
	for _, s := range o.sets {
		if err := applySet(user, s, false); err != nil {
			return nil, err
		}
	}
	for _, s := range o.setStrings {
		if err := applySet(user, s, true); err != nil {
			return nil, err
		}
	}
	return user, nil
}

// validateValues checks values against values.schema.json as Helm 3 does
// (pkg/chartutil/jsonschema.go: gojsonschema, one "- field: description" per error).
func validateValues(c *chart, values map[string]interface{}) error {
	if c.schema == nil {
		return nil
	}
	doc, err := json.Marshal(values)
	if err != nil {
		return err
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(c.schema), gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return fmt.Errorf("values.schema.json: %v", err)
	}
	if result.Valid() {
		return nil
	}
	var sb strings.Builder
	for _, e := range result.Errors() {
		sb.WriteString(fmt.Sprintf("- %s\n", e))
	}
	return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n%s", c.name, sb.String())
}

// ---- .Capabilities ----

type kubeVersion struct {
	Version    string
	Major      string
	Minor      string
	GitVersion string
}

func (k kubeVersion) String() string { return k.Version }

type versionSet []string

func (v versionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

type capabilities struct {
	KubeVersion kubeVersion
	APIVersions versionSet
	HelmVersion map[string]string
}

// The group versions a 1.29..1.32 kube-apiserver serves, which Helm's default set
// (client-go's scheme) also lists.
var builtinAPIVersions = []string{
	"v1", "admissionregistration.k8s.io/v1", "apiextensions.k8s.io/v1", "apiregistration.k8s.io/v1",
	"apps/v1", "authentication.k8s.io/v1", "authorization.k8s.io/v1", "autoscaling/v1", "autoscaling/v2",
	"batch/v1", "certificates.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1",
	"events.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1", "networking.k8s.io/v1", "node.k8s.io/v1",
	"policy/v1", "rbac.authorization.k8s.io/v1", "scheduling.k8s.io/v1", "storage.k8s.io/v1",
}

var kubeVersionRe = regexp.MustCompile(`^v?([0-9]+)\.([0-9]+)\.([0-9]+)`)

func makeCapabilities(o options) (capabilities, error) {
	m := kubeVersionRe.FindStringSubmatch(o.kubeVersion)
	if m == nil {
		return capabilities{}, fmt.Errorf("--kube-version %q: want vMAJOR.MINOR.PATCH", o.kubeVersion)
	}
	v := "v" + strings.TrimPrefix(o.kubeVersion, "v")
	return capabilities{
		KubeVersion: kubeVersion{Version: v, Major: m[1], Minor: m[2], GitVersion: v},
		APIVersions: append(append(versionSet{}, builtinAPIVersions...), o.apiVersions...),
		HelmVersion: map[string]string{"Version": "v3-compatible (chart-render)"},
	}, nil
}

// checkKubeVersion applies Chart.yaml's kubeVersion as Helm does.
func checkKubeVersion(c *chart, caps capabilities) error {
	constraint, _ := c.metadata["kubeVersion"].(string)
	if constraint == "" {
		return nil
	}
	cons, err := semver.NewConstraint(constraint)
	if err != nil {
		return fmt.Errorf("Chart.yaml: kubeVersion %q: %v", constraint, err)
	}
	v, err := semver.NewVersion(caps.KubeVersion.Version)
	if err != nil {
		return err
	}
	if !cons.Check(v) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", constraint, caps.KubeVersion.Version)
	}
	return nil
}

// ---- .Files ----

type files map[string][]byte

func (f files) GetBytes(name string) []byte { return f[name] }
func (f files) Get(name string) string      { return string(f[name]) }
func (f files) Lines(name string) []string {
	if f[name] == nil {
		return []string{}
	}
	return strings.Split(string(f[name]), "\n")
}

// ---- the engine ----

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func funcMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	extra := template.FuncMap{
		"toYaml": toYAML,
		"mustToYaml": func(v interface{}) (string, error) {
			data, err := yaml.Marshal(v)
			return strings.TrimSuffix(string(data), "\n"), err
		},
		"fromYaml": func(s string) map[string]interface{} {
			m := map[string]interface{}{}
			if err := yaml.Unmarshal([]byte(s), &m); err != nil {
				m["Error"] = err.Error()
			}
			return m
		},
		"fromYamlArray": func(s string) []interface{} {
			a := []interface{}{}
			if err := yaml.Unmarshal([]byte(s), &a); err != nil {
				a = []interface{}{err.Error()}
			}
			return a
		},
		"toJson": func(v interface{}) string {
			data, err := json.Marshal(v)
			if err != nil {
				return ""
			}
			return string(data)
		},
		"mustToJson": func(v interface{}) (string, error) {
			data, err := json.Marshal(v)
			return string(data), err
		},
		"fromJson": func(s string) map[string]interface{} {
			m := map[string]interface{}{}
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				m["Error"] = err.Error()
			}
			return m
		},
		"fromJsonArray": func(s string) []interface{} {
			a := []interface{}{}
			if err := json.Unmarshal([]byte(s), &a); err != nil {
				a = []interface{}{err.Error()}
			}
			return a
		},
		"toToml": func(interface{}) (string, error) {
			return "", errors.New("toToml is not supported by this renderer")
		},
		"required": func(warn string, val interface{}) (interface{}, error) {
			if val == nil {
				return val, errors.New(warn)
			}
			if s, ok := val.(string); ok && s == "" {
				return val, errors.New(warn)
			}
			return val, nil
		},
		// As under `helm template` (nothing is found), or --lookup's objects.
		"lookup": lookup,
		// Placeholders, bound to the template set in bindIncludeAndTpl.
		"include": func(string, interface{}) string { return "not implemented" },
		"tpl":     func(string, interface{}) interface{} { return "not implemented" },
	}
	for k, v := range extra {
		f[k] = v
	}
	return f
}

// Helm's lookup: the object of that apiVersion, kind, namespace ("" for any) and name, or
// an empty map; for an empty name, a List of every match.
func lookup(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
	var items []interface{}
	for _, o := range lookupObjects {
		meta, _ := o["metadata"].(map[string]interface{})
		if o["apiVersion"] != apiVersion || o["kind"] != kind ||
			(namespace != "" && meta["namespace"] != namespace) {
			continue
		}
		if name == "" {
			items = append(items, o)
		} else if meta["name"] == name {
			return o, nil
		}
	}
	if name == "" {
		return map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items}, nil
	}
	return map[string]interface{}{}, nil
}

func readObjects(file string) ([]map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []map[string]interface{}
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var o map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("%s, document %d: %v", file, i+1, err)
		}
		// A List (what `kubectl get A B -o yaml` prints) stands for its items.
		if items, ok := o["items"].([]interface{}); ok && strings.HasSuffix(fmt.Sprint(o["kind"]), "List") {
			for j, item := range items {
				m, ok := item.(map[string]interface{})
				if !ok {
					return nil, fmt.Errorf("%s, document %d: items[%d] is not an object", file, i+1, j)
				}
				out = append(out, m)
			}
		} else if o != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

const recursionMax = 1000

// bindIncludeAndTpl gives `t` the include and tpl of Helm's engine (pkg/engine/engine.go).
func bindIncludeAndTpl(t *template.Template, depth map[string]int) {
	t.Funcs(template.FuncMap{
		"include": func(name string, data interface{}) (string, error) {
			if depth[name] > recursionMax {
				return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
			}
			depth[name]++
			defer func() { depth[name]-- }()
			var buf strings.Builder
			err := t.ExecuteTemplate(&buf, name, data)
			return buf.String(), err
		},
		"tpl": func(text string, vals interface{}) (string, error) {
			clone, err := t.Clone()
			if err != nil {
				return "", err
			}
			clone.Option("missingkey=zero")
			bindIncludeAndTpl(clone, depth)
			parsed, err := clone.New(t.Name()).Parse(text)
			if err != nil {
				return "", fmt.Errorf("cannot parse template %q: %v", text, err)
			}
			var buf strings.Builder
			if err := parsed.Execute(&buf, vals); err != nil {
				return "", fmt.Errorf("error during tpl function execution for %q: %v", text, err)
			}
			return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
		},
	})
}

var execErrorRe = regexp.MustCompile(`^template: ([^:]+:[0-9]+:[0-9]+): executing "[^"]*" at <[^>]*>: error calling (?:required|fail): (.*)$`)

// cleanupExecError turns a required/fail error into Helm's "execution error at (file:line:col): message".
func cleanupExecError(err error) error {
	if m := execErrorRe.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("execution error at (%s): %s", m[1], m[2])
	}
	return err
}

type rendered struct {
	path string // "templates/x.yaml"
	text string
}

func renderTemplates(c *chart, top map[string]interface{}) ([]rendered, string, error) {
	t := template.New("gotpl").Option("missingkey=zero")
	t.Funcs(funcMap())
	bindIncludeAndTpl(t, map[string]int{})
	paths := make([]string, 0, len(c.templates))
	for p := range c.templates {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if _, err := t.New(c.name + "/" + p).Parse(c.templates[p]); err != nil {
			return nil, "", fmt.Errorf("parse error in %q: %v", c.name+"/"+p, err)
		}
	}
	var out []rendered
	notes := ""
	for _, p := range paths {
		if strings.HasPrefix(path.Base(p), "_") {
			continue
		}
		vals := map[string]interface{}{}
		for k, v := range top {
			vals[k] = v
		}
		vals["Template"] = map[string]interface{}{"Name": c.name + "/" + p, "BasePath": c.name + "/templates"}
		var buf strings.Builder
		if err := t.ExecuteTemplate(&buf, c.name+"/"+p, vals); err != nil {
			return nil, "", cleanupExecError(err)
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if p == "templates/NOTES.txt" {
			notes = text
			continue
		}
		out = append(out, rendered{p, text})
	}
	return out, notes, nil
}

// ---- manifests ----

// Helm's releaseutil.InstallOrder; kinds not listed come last, by kind name.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding",
	"RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
}

type manifest struct {
	source string
	kind   string
	text   string
}

var docSeparator = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

func splitManifests(c *chart, files []rendered) ([]manifest, error) {
	var out []manifest
	for _, f := range files {
		source := c.name + "/" + f.path
		for _, doc := range docSeparator.Split(f.text, -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				return nil, fmt.Errorf("YAML parse error on %s: %v", source, err)
			}
			// A document of comments only parses to nothing and is dropped, as in Helm.
			var any interface{}
			_ = yaml.Unmarshal([]byte(doc), &any)
			if any == nil {
				continue
			}
			if head.Kind == "" {
				return nil, fmt.Errorf("%s: a document has no kind", source)
			}
			if _, ok := head.Metadata.Annotations["helm.sh/hook"]; ok {
				return nil, fmt.Errorf("%s: hooks (helm.sh/hook) are not supported by this renderer", source)
			}
			out = append(out, manifest{source, head.Kind, strings.TrimSpace(doc)})
		}
	}
	rank := map[string]int{}
	for i, k := range installOrder {
		rank[k] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, aok := rank[out[i].kind]
		b, bok := rank[out[j].kind]
		switch {
		case !aok && !bok:
			return out[i].kind < out[j].kind
		case !aok:
			return false
		case !bok:
			return true
		}
		return a < b
	})
	return out, nil
}

func run(o options) (string, error) {
	c, err := loadChart(o.chartDir)
	if err != nil {
		return "", err
	}
	caps, err := makeCapabilities(o)
	if err != nil {
		return "", err
	}
	if err := checkKubeVersion(c, caps); err != nil {
		return "", err
	}
	user, err := userValues(o)
	if err != nil {
		return "", err
	}
	values := coalesce(user, c.values)
	if err := validateValues(c, values); err != nil {
		return "", err
	}
	if o.valuesOut != "" {
		data, _ := json.MarshalIndent(values, "", "  ")
		if err := os.WriteFile(o.valuesOut, data, 0o644); err != nil {
			return "", err
		}
	}
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": o.releaseName, "Namespace": o.namespace, "Service": "Helm", "Revision": 1,
			"IsInstall": !o.isUpgrade, "IsUpgrade": o.isUpgrade,
		},
		"Chart":        chartObject(c.metadata),
		"Capabilities": caps,
		"Files":        files(c.files),
	}
	out, notes, err := renderTemplates(c, top)
	if err != nil {
		return "", err
	}
	manifests, err := splitManifests(c, out)
	if err != nil {
		return "", err
	}
	if o.notesOut != "" {
		if err := os.WriteFile(o.notesOut, []byte(notes), 0o644); err != nil {
			return "", err
		}
	}
	var b bytes.Buffer
	if o.includeCRDs {
		for _, p := range c.crds {
			fmt.Fprintf(&b, "---\n# Source: %s/%s\n%s\n", c.name, p, strings.TrimRight(string(c.files[p]), "\n"))
		}
	}
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.source, m.text)
	}
	return b.String(), nil
}
