// Command interop-contender is the Go side of bindings/interop/run.sh:
//
//	interop-contender try  RESOURCE TTL_MS HOLD_MS   (HOLD_MS "stdin": until a line or EOF)
//	interop-contender wait RESOURCE TTL_MS HOLD_MS WAIT_MS
//
// Masters from REDLOCK_NODES (comma-separated); fencing on, quarantine off.
// Prints "ACQUIRED <fence> <unix ms>", "RELEASING <unix ms>"; or "LOCKED"
// (exit 75); or "ERROR <name>" (exit 1).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"redlock-c.invalid/redlock"
)

func msArg(s string) time.Duration {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Println("ERROR bad number", s)
		os.Exit(2)
	}
	return time.Duration(n) * time.Millisecond
}

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: interop-contender try|wait RESOURCE TTL_MS HOLD_MS [WAIT_MS]")
		os.Exit(2)
	}
	mode, resource, ttl := os.Args[1], os.Args[2], msArg(os.Args[3])
	var nodes []string
	for _, n := range strings.Split(os.Getenv("REDLOCK_NODES"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			nodes = append(nodes, n)
		}
	}
	c, err := redlock.Open(nodes, redlock.WithFencing(true), redlock.WithQuarantine(false))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	defer c.Close()
	var l *redlock.Lock
	if mode == "wait" {
		l, err = c.LockWait(context.Background(), resource, ttl, msArg(os.Args[5]))
	} else {
		l, err = c.TryLock(context.Background(), resource, ttl)
	}
	if errors.Is(err, redlock.ErrLocked) || errors.Is(err, redlock.ErrTimeout) {
		fmt.Println("LOCKED")
		c.Close()
		os.Exit(75)
	}
	var errno redlock.Errno
	if errors.As(err, &errno) {
		fmt.Println("ERROR", errno.Name())
		c.Close()
		os.Exit(1)
	}
	fmt.Printf("ACQUIRED %d %d\n", l.Fence, time.Now().UnixMilli())
	if os.Args[4] == "stdin" {
		bufio.NewReader(os.Stdin).ReadString('\n') // hold until a line or EOF
	} else {
		time.Sleep(msArg(os.Args[4]))
	}
	fmt.Printf("RELEASING %d\n", time.Now().UnixMilli())
	l.Unlock(context.Background())
}
