// Package undo is how brakebench takes back what it changes in a cluster: the revert Stack that
// faults, brake toggles and the suites share (whatever acts registers its revert first; the stack
// runs every revert, newest first, on success, error, Ctrl-C and SIGTERM), the Journal that
// records every change before it is made, and the registry of Replayers through which
// `brakebench cleanup` restores, from a journal alone, what a crashed run left changed.
package undo

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Revert undoes one change. It must be safe to call when the change only half happened.
type Revert func(ctx context.Context) error

// Stack is a LIFO of reverts.
type Stack struct {
	mu    sync.Mutex
	items []item
}

type item struct {
	name string
	fn   Revert
}

// Push registers a revert; call it before acting, or with the revert an action returned even
// when the action failed.
func (s *Stack) Push(name string, fn Revert) {
	if fn == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = append(s.items, item{name, fn})
}

// Len is the number of pending reverts.
func (s *Stack) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// Run runs and removes every revert, newest first; all run even when some fail.
func (s *Stack) Run(ctx context.Context) error {
	s.mu.Lock()
	items := s.items
	s.items = nil
	s.mu.Unlock()
	var errs []error
	for i := len(items) - 1; i >= 0; i-- {
		if err := items[i].fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("revert %s: %w", items[i].name, err))
		}
	}
	return errors.Join(errs...)
}
