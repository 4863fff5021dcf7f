// Command election: two nodes campaign, the leader's lease is watched (kept
// extended) while it leads, and it hands over by resigning; the next
// leader's term is larger, so a store that checks terms (as fenced_write
// checks tokens) refuses the old leader.  Then a lock kept by a watch past
// its TTL.
//
//	go run ./examples/election redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
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

// elected waits for e's next term, for at most d.
func elected(e *redlock.Election, d time.Duration) (uint64, error) {
	select {
	case term, ok := <-e.Elected:
		if ok {
			return term, nil
		}
	case <-time.After(d):
	}
	return 0, fmt.Errorf("%s: not elected within %v", e.Name, d)
}

func run(nodes []string) error {
	ctx := context.Background()
	// WithQuarantine(false) only because test masters are seconds old.
	a, err := redlock.Open(nodes, redlock.WithQuarantine(false), redlock.WithOwner("scheduler-a"))
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := redlock.Open(nodes, redlock.WithQuarantine(false), redlock.WithOwner("scheduler-b"))
	if err != nil {
		return err
	}
	defer b.Close()

	first, err := a.Elect(ctx, "scheduler", 2*time.Second)
	if err != nil {
		return err
	}
	termA, err := elected(first, 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Println("scheduler-a leads, term", termA)

	second, err := b.Elect(ctx, "scheduler", 2*time.Second)
	if err != nil {
		return err
	}
	view, err := a.Leader(ctx, "scheduler")
	if err != nil {
		return err
	}
	fmt.Printf("leader as the masters see it: %s, term %d\n", view.Owner, view.Term)

	first.Resign() // hand-over: b's campaign is woken by the release
	termB, err := elected(second, 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Println("scheduler-b elected, term", termB)
	second.Resign()
	if termB <= termA {
		return errors.New("the new term is not larger")
	}

	// A watched lock outlives its TTL: the watch extends it until Unlock.
	l, err := a.Lock(ctx, "report", time.Second)
	if err != nil {
		return err
	}
	lost, err := l.Watch()
	if err != nil {
		return err
	}
	select {
	case err := <-lost:
		return fmt.Errorf("watched lock lost: %w", err)
	case <-time.After(1500 * time.Millisecond): // the work: longer than the TTL
	}
	fmt.Println("watched lock after 1500 ms of a 1000 ms TTL: held")
	return l.Unlock(ctx)
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
