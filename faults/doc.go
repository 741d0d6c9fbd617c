// Package faults holds what changes a cluster on purpose: the fault types a cell can inject (the
// CellFault registry, cell_*.go) and the low-level changes they make (APF objects, node
// conditions, control-plane flags). Every change is journaled and its revert registered through
// package undo before it is made.
package faults
