package pointertest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/techlearningpro/engagement/internal/pointer"
)

// ErrInjected is the fault the wrappers report when their Err is nil.
var ErrInjected = errors.New("pointertest: injected fault")

func injected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return err
}

// LostReply performs the real Swap and then reports Err, as when a request
// reaches the store but its reply is lost. If the real Swap fails, its error
// is returned instead.
type LostReply struct {
	pointer.Store
	Err error
}

// Swap implements pointer.Store.
func (s LostReply) Swap(ctx context.Context, expect pointer.Version, next pointer.Pointer) error {
	if err := s.Store.Swap(ctx, expect, next); err != nil {
		return err
	}
	return injected(s.Err)
}

// FailingSwap reports Err from every Swap without writing anything, as when
// a request never reaches the store.
type FailingSwap struct {
	pointer.Store
	Err error
}

// Swap implements pointer.Store.
func (s FailingSwap) Swap(context.Context, pointer.Version, pointer.Pointer) error {
	return injected(s.Err)
}

// Blackout is a store that becomes unreachable during a Swap: the Swap
// reports Err (after performing the real Swap when Lands is set), and from
// then on every call reports Err too, so the caller cannot re-read to learn
// what happened. Use it through a pointer: it carries state.
type Blackout struct {
	pointer.Store
	Err   error
	Lands bool

	down atomic.Bool
}

// Swap implements pointer.Store.
func (s *Blackout) Swap(ctx context.Context, expect pointer.Version, next pointer.Pointer) error {
	if s.down.Load() {
		return injected(s.Err)
	}
	s.down.Store(true)
	if s.Lands {
		if err := s.Store.Swap(ctx, expect, next); err != nil {
			return err
		}
	}
	return injected(s.Err)
}

// Load implements pointer.Store.
func (s *Blackout) Load(ctx context.Context) (pointer.Pointer, pointer.Version, error) {
	if s.down.Load() {
		return pointer.Pointer{}, pointer.NoVersion, injected(s.Err)
	}
	return s.Store.Load(ctx)
}

// Generations implements pointer.Store.
func (s *Blackout) Generations(ctx context.Context) ([]int64, error) {
	if s.down.Load() {
		return nil, injected(s.Err)
	}
	return s.Store.Generations(ctx)
}

// LoadGeneration implements pointer.Store.
func (s *Blackout) LoadGeneration(ctx context.Context, generation int64) (pointer.Pointer, error) {
	if s.down.Load() {
		return pointer.Pointer{}, injected(s.Err)
	}
	return s.Store.LoadGeneration(ctx, generation)
}

// HistoryOnly takes the generation in the history and then fails to replace
// the pointer, on that Swap and every later one, as a store whose pointer
// object cannot be written (a read-only directory, a refused PUT) does.
// PutHistory writes the history copy the way the store itself would. Use
// it through a pointer: it carries state.
type HistoryOnly struct {
	pointer.Store
	PutHistory func(gen int64, data []byte) error
	Err        error

	taken atomic.Bool
}

// Swap implements pointer.Store.
func (s *HistoryOnly) Swap(_ context.Context, _ pointer.Version, next pointer.Pointer) error {
	if !s.taken.Swap(true) {
		data, err := pointer.Encode(next)
		if err != nil {
			return err
		}
		if err := s.PutHistory(next.Generation, data); err != nil {
			return err
		}
	}
	return injected(s.Err)
}
