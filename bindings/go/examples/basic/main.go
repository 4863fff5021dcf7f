// Command basic takes a lock and releases it, and shows what a second
// client is told meanwhile.
//
//	go run ./examples/basic redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//
// Run by examples_test.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"redlock-c.invalid/redlock"
)

func run(nodes []string) error {
	ctx := context.Background()
	// WithQuarantine(false) only because test masters start seconds before
	// this runs: keep the restart quarantine on against real masters.
	a, err := redlock.Open(nodes, redlock.WithQuarantine(false), redlock.WithOwner("worker-a"))
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := redlock.Open(nodes, redlock.WithQuarantine(false), redlock.WithOwner("worker-b"))
	if err != nil {
		return err
	}
	defer b.Close()

	l, err := a.Lock(ctx, "orders:42", 10*time.Second)
	if errors.Is(err, redlock.ErrNoQuorum) {
		return fmt.Errorf("too few masters answered: %w", err) // its text has the votes
	} else if err != nil {
		return err
	}
	fmt.Printf("worker-a locked %s, valid for %v\n", l.Resource, l.Validity().Round(time.Millisecond))
	fmt.Println("  votes:", a.LastVotes())

	// One attempt while it is held: ErrLocked (a quorum refused), not
	// ErrNoQuorum (too few masters answered: an outage).
	if other, err := b.TryLock(ctx, "orders:42", 10*time.Second); err == nil {
		other.Unlock(ctx)
		return errors.New("worker-b got it while held")
	} else if !errors.Is(err, redlock.ErrLocked) {
		return err
	}
	fmt.Println("worker-b refused while held: ErrLocked")

	if err := l.Unlock(ctx); err != nil {
		return err
	}
	// Released: worker-b waits up to 5 s for it (a release wakes it at once).
	next, err := b.LockWait(ctx, "orders:42", 10*time.Second, 5*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("worker-b locked it after the release (owner %s)\n", next.Owner())
	return next.Unlock(ctx)
}

func main() {
	nodes := os.Args[1:]
	if len(nodes) == 0 {
		nodes = []string{"redis://127.0.0.1:6379"}
	}
	if err := run(nodes); err != nil {
		log.Fatal(err)
	}
}
