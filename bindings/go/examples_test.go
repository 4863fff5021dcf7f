package redlock

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestExamples builds examples/* as a user does (go build) and runs each
// against the test's masters: each must exit 0 and print what it promises.
func TestExamples(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./examples/...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}
	expected := map[string][]string{
		"basic": {`worker-a locked orders:42, valid for \d`, `worker-b refused while held: ErrLocked`,
			`worker-b locked it after the release \(owner worker-b\)`},
		"fenced_write": {`next-worker writes: accepted`, `slow-worker's late write with token \d+: refused`},
		"election": {`scheduler-a leads, term \d+`, `leader as the masters see it: scheduler-a`,
			`scheduler-b elected, term \d+`, `watched lock after 1500 ms of a 1000 ms TTL: held`},
	}
	for name, wants := range expected {
		name, wants := name, wants
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(filepath.Join(bin, name), uris()...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, out)
			}
			for _, want := range wants {
				if !regexp.MustCompile(want).Match(out) {
					t.Errorf("%s: no line matching %q in:\n%s", name, want, out)
				}
			}
		})
	}
}
