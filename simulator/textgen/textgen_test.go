package textgen

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"Hello, world!", []string{"Hello", ",", " world", "!"}},
		{"What is 12*12?", []string{"What", " is", " 12", "*", "12", "?"}},
		{"a  b\n\nc ", []string{"a", " ", " b", "\n\n", "c", " "}},
		{" leading", []string{" leading"}},
		{"naïve café", []string{"naïve", " café"}},
		{"", nil},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.text), func(t *testing.T) {
			got := Split(tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Split = %q, want %q", got, tc.want)
			}
			if strings.Join(got, "") != tc.text {
				t.Errorf("pieces do not join back to the text")
			}
		})
	}
}

// TestAnswerRule checks the deterministic answers quality probes rely on.
func TestAnswerRule(t *testing.T) {
	cases := []struct {
		prompt string
		wrong  bool
		want   string
	}{
		{"What is 12*12? Digits only.", false, "144."},
		{"What is 12*12? Digits only.", true, "295."},
		{"Compute 7 + 5", false, "12."},
		{"and 9 - 10", false, "-1."},
		{"100/7", false, "14."},
		{"1/0", false, "undefined."},
		{"Tell me a story", false, ""},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%v", tc.prompt, tc.wrong), func(t *testing.T) {
			if got := answerText(tc.prompt, tc.wrong, 0); got != tc.want {
				t.Errorf("answer %q, want %q", got, tc.want)
			}
		})
	}
}
