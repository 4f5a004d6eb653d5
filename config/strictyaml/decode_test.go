package strictyaml

import (
	"reflect"
	"strings"
	"testing"

	promconfig "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"
)

// word is a type with its own unmarshaler, so the decoder leaves it to
// yaml and names its shape from Options.Shapes.
type word struct{ s string }

func (w *word) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || strings.ContainsAny(n.Value, " \t") {
		return &yaml.TypeError{Errors: []string{"not a word"}}
	}
	w.s = n.Value
	return nil
}

type testItem struct {
	Name    string                      `yaml:"name"`
	Size    int                         `yaml:"size"`
	Word    word                        `yaml:"word"`
	HTTP    promconfig.HTTPClientConfig `yaml:"http"`
	Line    int                         `yaml:"-"`
	Visited []string                    `yaml:"-"`
}

type testFile struct {
	Items []testItem `yaml:"items"`
}

// testOptions starts every item at size 7 with its line, and records the
// http_client_config paths the check saw.
func testOptions(checked *[]string) Options {
	return Options{
		Dir: "/etc/test",
		Element: func(t reflect.Type, line int) (reflect.Value, bool) {
			if t != reflect.TypeFor[testItem]() {
				return reflect.Value{}, false
			}
			return reflect.ValueOf(testItem{Size: 7, Line: line}), true
		},
		CheckHTTPClient: func(hc *promconfig.HTTPClientConfig, path string, p *Problems) {
			*checked = append(*checked, path)
			if a := hc.Authorization; a != nil && a.CredentialsFile != "" {
				p.Fail(path+".authorization.credentials_file", "checked %s", Quote(a.CredentialsFile))
			}
		},
		Shapes: map[reflect.Type]string{reflect.TypeFor[word](): "a single word"},
	}
}

func decodeTest(t *testing.T, doc string, o Options) (testFile, error) {
	t.Helper()
	var f testFile
	root, err := Parse([]byte(doc), "t.yml")
	if err != nil {
		return f, err
	}
	p := NewProblems("t.yml")
	Decode(root, &f, p, o)
	return f, p.Err()
}

func TestDecodeOptions(t *testing.T) {
	t.Run("list elements start from their defaults and know their line", func(t *testing.T) {
		var checked []string
		f, err := decodeTest(t, "items:\n  - name: a\n  - name: b\n    size: 2\n  -\n", testOptions(&checked))
		if err != nil {
			t.Fatal(err)
		}
		want := []testItem{{Name: "a", Size: 7, Line: 2}, {Name: "b", Size: 2, Line: 3}, {Size: 7, Line: 5}}
		for i, it := range f.Items {
			if it.Name != want[i].Name || it.Size != want[i].Size || it.Line != want[i].Line {
				t.Errorf("item %d = %+v, want %+v", i, it, want[i])
			}
		}
		if len(f.Items) != len(want) {
			t.Errorf("%d items, want %d", len(f.Items), len(want))
		}
	})
	t.Run("redirects follow the caller's default", func(t *testing.T) {
		var checked []string
		for _, follow := range []bool{false, true} {
			o := testOptions(&checked)
			o.FollowRedirects = follow
			f, err := decodeTest(t, "items:\n  - http: {enable_http2: false}\n  - http: {follow_redirects: true}\n", o)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Items[0].HTTP.FollowRedirects; got != follow {
				t.Errorf("default %v: follow_redirects %v", follow, got)
			}
			if !f.Items[1].HTTP.FollowRedirects {
				t.Errorf("default %v: follow_redirects: true was not kept", follow)
			}
		}
	})
	t.Run("the check sees each http_client_config with paths made absolute", func(t *testing.T) {
		var checked []string
		_, err := decodeTest(t, "items:\n  - http: {}\n  - http:\n      authorization:\n        credentials_file: tok\n", testOptions(&checked))
		want := `t.yml:5: items[1].http.authorization.credentials_file: checked "/etc/test/tok"`
		if err == nil || err.Error() != want {
			t.Errorf("got error %v, want %s", err, want)
		}
		if got := strings.Join(checked, " "); got != "items[0].http items[1].http" {
			t.Errorf("checked %q", got)
		}
	})
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"root must be a mapping", "- a\n", `t.yml:1: the file must be a mapping, got a list`},
		{"shape of an own unmarshaler", "items:\n  - word: two words\n", `t.yml:2: items[0].word: must be a single word, got "two words"`},
		{"unknown key with a suggestion", "items:\n  - nmae: a\n", `t.yml:2: items[0]: unknown field "nmae" (did you mean "name"?)`},
		{"duplicate key", "items:\n  - size: 1\n    size: 2\n", `t.yml:3: items[0].size: duplicate key, first defined at line 2`},
		{"a scalar where a Secret is held is hidden", "items:\n  - http: Bearer s3cr3t\n", `t.yml:2: items[0].http: must be a mapping, got <secret>`},
		{"inline secret", "items:\n  - http: {authorization: {credentials: s3cr3t}}\n",
			`t.yml:2: items[0].http.authorization.credentials: inline secrets are not allowed: put the value in a file and name it with credentials_file`},
		{"syntax error at its line", "items:\n  - name: a\n   size: 1\n",
			`t.yml:3: invalid YAML: key "size" is indented 3 spaces, which lines up with nothing above it: indent it 4 spaces to align it with "name" (line 2), or 0 spaces to align it with "items" (line 1)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var checked []string
			_, err := decodeTest(t, tc.doc, testOptions(&checked))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}
