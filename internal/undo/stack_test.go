package undo

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestStackRunsAllNewestFirst(t *testing.T) {
	var order []string
	var s Stack
	s.Push("a", func(context.Context) error { order = append(order, "a"); return nil })
	s.Push("b", func(context.Context) error { order = append(order, "b"); return errors.New("boom") })
	s.Push("nil is ignored", nil)
	s.Push("c", func(context.Context) error { order = append(order, "c"); return nil })
	if s.Len() != 3 {
		t.Fatalf("Len = %d", s.Len())
	}
	err := s.Run(context.Background())
	if !reflect.DeepEqual(order, []string{"c", "b", "a"}) {
		t.Errorf("order %v", order)
	}
	if err == nil || err.Error() != "revert b: boom" {
		t.Errorf("err = %v", err)
	}
	if s.Len() != 0 {
		t.Error("stack not emptied")
	}
	if err := s.Run(context.Background()); err != nil {
		t.Errorf("second run: %v", err)
	}
}
