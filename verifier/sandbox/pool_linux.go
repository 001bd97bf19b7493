package sandbox

import (
	"context"
	"sync"
	"time"
)

// pool keeps sandboxes started and waiting for a command. One goroutine
// refills it, one sandbox at a time; a run that finds it empty starts its
// own sandbox, which costs the same.
type pool struct {
	disk   int64
	ready  chan *instance
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newPool starts filling a pool of n sandboxes built with the Runner's
// read-only directories and the given tmpfs size.
func newPool(r *Runner, n int, disk int64) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{disk: disk, ready: make(chan *instance, n), cancel: cancel}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		backoff := 100 * time.Millisecond
		for {
			in, err := r.start(ctx, r.ro, disk)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				r.log.Warn("sandbox pool: start failed", "err", err)
				select {
				case <-time.After(backoff):
					backoff = min(2*backoff, 10*time.Second)
				case <-ctx.Done():
					return
				}
				continue
			}
			backoff = 100 * time.Millisecond
			select {
			case p.ready <- in:
			case <-ctx.Done():
				in.discard()
				return
			}
		}
	}()
	return p
}

// get returns a waiting sandbox, or nil when none is ready.
func (p *pool) get() *instance {
	for {
		select {
		case in := <-p.ready:
			select {
			case <-in.exited:
				// Died while waiting; take the next one.
				in.closeFiles()
				continue
			default:
				return in
			}
		default:
			return nil
		}
	}
}

// close stops the refilling and ends the waiting sandboxes.
func (p *pool) close() {
	p.cancel()
	p.wg.Wait()
	for {
		select {
		case in := <-p.ready:
			in.discard()
		default:
			return
		}
	}
}
