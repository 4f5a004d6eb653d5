package perf

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// GoBench is one result line of `go test -bench`.
type GoBench struct {
	Package string
	Name    string // without the -GOMAXPROCS suffix
	N       int
	// Metrics maps a unit (ns/op, B/op, allocs/op, bytes/scrape, ...) to
	// its value.
	Metrics map[string]float64
}

// RunGoBench runs `go test -run ^$ -bench pattern -benchmem` with extra
// arguments on pkgs in dir and parses the results.
func RunGoBench(ctx context.Context, dir, pattern string, extra []string, pkgs ...string) ([]GoBench, string, error) {
	args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem"}, extra...)
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, string(out), fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	res, err := ParseGoBench(strings.NewReader(string(out)))
	return res, string(out), err
}

// ParseGoBench reads the output of go test -bench.
func ParseGoBench(r io.Reader) ([]GoBench, error) {
	var out []GoBench
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			continue // a benchmark's own log line
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		b := GoBench{Package: pkg, Name: f[0], N: n, Metrics: map[string]float64{}}
		if i := strings.LastIndexByte(b.Name, '-'); i > 0 {
			if _, err := strconv.Atoi(b.Name[i+1:]); err == nil {
				b.Name = b.Name[:i]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("parse %q: %w", line, err)
			}
			b.Metrics[f[i+1]] = v
		}
		out = append(out, b)
	}
	return out, sc.Err()
}
