// Command fenced_write shows why fencing tokens matter: a holder that
// stalled past its lock's expiry writes late, and the store refuses it
// because a newer holder's token is larger.  The lock alone cannot stop that
// write; the store's check can.
//
//	go run ./examples/fenced_write redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//
// Run by examples_test.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"redlock-c.invalid/redlock"
)

// fencedStore is the protected resource: it remembers the largest token it
// accepted and refuses a write carrying a smaller one (a row's version
// column, a conditional write, ...).
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
	value   string
}

func (s *fencedStore) write(token uint64, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return false
	}
	s.highest, s.value = token, value
	return true
}

func verdict(ok bool) string {
	if ok {
		return "accepted"
	}
	return "refused"
}

func run(nodes []string) error {
	ctx := context.Background()
	// WithFencing: every grant gets a token larger than every earlier one.
	// WithQuarantine(false) only because test masters are seconds old.
	open := func(owner string) (*redlock.Client, error) {
		return redlock.Open(nodes, redlock.WithFencing(true), redlock.WithQuarantine(false),
			redlock.WithOwner(owner))
	}
	slow, err := open("slow-worker")
	if err != nil {
		return err
	}
	defer slow.Close()
	next, err := open("next-worker")
	if err != nil {
		return err
	}
	defer next.Close()
	var store fencedStore

	// A short lock that its holder neither extends nor watches: it stalls
	// (a GC pause, a swapped-out process) and the lock expires under it.
	stale, err := slow.Lock(ctx, "ledger", 300*time.Millisecond)
	if err != nil {
		return err
	}
	fmt.Println("slow-worker holds ledger with token", stale.Fence)

	// The next worker waits for the expiry and gets a larger token.
	fresh, err := next.LockWait(ctx, "ledger", 10*time.Second, 5*time.Second)
	if err != nil {
		return err
	}
	fmt.Println("next-worker holds ledger with token", fresh.Fence)
	fmt.Println("next-worker writes:", verdict(store.write(fresh.Fence, "from next-worker")))

	// The stalled holder wakes up and writes as if it still held the lock.
	late := store.write(stale.Fence, "from slow-worker")
	fmt.Printf("slow-worker's late write with token %d: %s\n", stale.Fence, verdict(late))
	if err := fresh.Unlock(ctx); err != nil {
		return err
	}
	stale.Unlock(ctx) // long expired: nothing of ours is left (ErrLost)
	if late || fresh.Fence <= stale.Fence || store.value != "from next-worker" {
		return errors.New("the stale write was not refused")
	}
	return nil
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
