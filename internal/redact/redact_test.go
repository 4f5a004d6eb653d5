package redact

import "testing"

func TestText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no URL", "dial tcp 127.0.0.1:1: connection refused", "dial tcp 127.0.0.1:1: connection refused"},
		{"plain URL", `Post "http://h:8000/v1/chat/completions": EOF`, `Post "http://h:8000/v1/chat/completions": EOF`},
		{"token as user name", `got "http://sk-TOKEN@h:8000/v1"`, `got "http://xxxxx@h:8000/v1"`},
		{"user and password", "url https://alice:pw@h/x next", "url https://xxxxx@h/x next"},
		{"at sign in the path stays", "http://h/a@b", "http://h/a@b"},
		{"query values", "GET http://h/m?api_key=s1&x=s2#frag.", "GET http://h/m?api_key=xxxxx&x=xxxxx#frag."},
		{"bare query token", "http://h?sk-abc", "http://h?xxxxx"},
		{"empty query", "http://h/?", "http://h/?"},
		{"two URLs", "from http://a@h1/ to http://h2/?k=v", "from http://xxxxx@h1/ to http://h2/?k=xxxxx"},
		{"unparsable URL", "http://tok en@h", "http://tok en@h"},
		{"unparsable URL with userinfo", "http://to%zz@h:bad/", "http://xxxxx@h:bad/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
