package storetest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/tasks"
)

// Bounds of ThousandConcurrentTasks, generous enough for a networked store's
// client and tight enough to catch a goroutine or a megabyte per task.
const (
	scaleTasks          = 1000
	scaleOwners         = 10
	scaleWorkers        = 16
	scaleMaxGoroutines  = 8        // store goroutines for 1,000 live tasks and watchers
	scaleMaxHeapPerTask = 16 << 10 // bytes of heap per live task with a watcher
)

func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func testThousand(e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	g0, h0 := runtime.NumGoroutine(), heapNow()

	type live struct {
		owner, id string
		w         <-chan tasks.Task
	}
	all := make([]live, scaleTasks)
	for i := range all {
		owner := fmt.Sprintf("sub:user-%d", i%scaleOwners)
		task := e.create(owner, tasks.Spec{Holder: fmt.Sprintf("replica-%d", i%scaleWorkers), TTL: time.Hour})
		w, err := e.s.Watch(ctx, owner, task.ID)
		if err != nil {
			e.t.Fatal(err)
		}
		all[i] = live{owner, task.ID, w}
	}
	g1, h1 := runtime.NumGoroutine(), heapNow()
	perTask := (int64(h1) - int64(h0)) / scaleTasks
	e.t.Logf("%d live tasks with one watcher each: %+d goroutines, %+d heap bytes (%d per task)",
		scaleTasks, g1-g0, int64(h1)-int64(h0), perTask)
	if g1-g0 > scaleMaxGoroutines {
		e.t.Errorf("the store runs %d goroutines for %d tasks, want at most %d", g1-g0, scaleTasks, scaleMaxGoroutines)
	}
	if perTask > scaleMaxHeapPerTask {
		e.t.Errorf("%d heap bytes per live task, want at most %d", perTask, scaleMaxHeapPerTask)
	}

	// Drive every task through input and completion with a bounded pool
	// of runners while clients answer, all concurrently.
	start := time.Now()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range scaleWorkers {
		wg.Go(func() {
			for i := range jobs {
				l := all[i]
				holder := fmt.Sprintf("replica-%d", i%scaleWorkers)
				steps := []func() error{
					func() error {
						_, err := e.s.Update(ctx, l.owner, l.id, tasks.Change{Holder: holder, To: tasks.StatusInputRequired,
							InputRequests: map[string]tasksValue{"q": raw(`{"method":"elicitation/create"}`)}})
						return err
					},
					func() error {
						d, err := e.s.DeliverInputs(ctx, l.owner, l.id, map[string]tasksValue{"q": raw(`{"action":"accept"}`)})
						if err == nil && len(d.Accepted) != 1 {
							err = fmt.Errorf("accepted %q", d.Accepted)
						}
						return err
					},
					func() error {
						_, err := e.s.Renew(ctx, l.id, holder, 0)
						return err
					},
					func() error {
						_, err := e.s.Update(ctx, l.owner, l.id, tasks.Change{Holder: holder, ConsumeInputs: []string{"q"},
							To: tasks.StatusCompleted, Result: raw(fmt.Sprintf(`{"n":%d}`, i))})
						return err
					},
				}
				for n, step := range steps {
					if err := step(); err != nil {
						e.t.Errorf("task %d step %d: %v", i, n, err)
						break
					}
				}
			}
		})
	}
	// Readers interleave with the runners.
	var readers sync.WaitGroup
	for r := range scaleOwners {
		readers.Go(func() {
			owner := fmt.Sprintf("sub:user-%d", r)
			for k := range 20 {
				if _, err := e.s.List(ctx, owner, "", 0); err != nil {
					e.t.Errorf("List: %v", err)
					return
				}
				for i := r + k*scaleOwners; i < scaleTasks; i += 20 * scaleOwners {
					if _, err := e.s.Get(ctx, owner, all[i].id); err != nil {
						e.t.Errorf("Get: %v", err)
						return
					}
				}
			}
		})
	}
	// Pollers call nothing but Get, as tasks/get clients do, so that an
	// unsynchronised read path cannot hide behind another method's lock.
	stopPolling := make(chan struct{})
	for p := range 2 {
		readers.Go(func() {
			for {
				for i := p; i < scaleTasks; i += 2 {
					select {
					case <-stopPolling:
						return
					default:
					}
					if _, err := e.s.Get(ctx, all[i].owner, all[i].id); err != nil {
						e.t.Errorf("Get: %v", err)
						return
					}
				}
			}
		})
	}
	for i := range all {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(stopPolling)
	readers.Wait()
	elapsed := time.Since(start)

	for i, l := range all {
		var last tasks.Task
		n := 0
		for s := range l.w {
			if s.Version <= last.Version {
				e.t.Fatalf("task %d: watch versions out of order", i)
			}
			last = s
			n++
		}
		if last.Status != tasks.StatusCompleted || string(last.Result) != fmt.Sprintf(`{"n":%d}`, i) || n != 4 {
			e.t.Fatalf("task %d: watch ended with %s %s after %d snapshots", i, last.Status, last.Result, n)
		}
	}
	g2 := runtime.NumGoroutine()
	e.t.Logf("%d tasks driven to completion by %d runners in %v; goroutines after: %+d", scaleTasks, scaleWorkers, elapsed, g2-g0)
	if g2-g0 > scaleMaxGoroutines {
		e.t.Errorf("%d goroutines left after all tasks finished", g2-g0)
	}
	// Expiry reclaims every one of them.
	e.clock.Advance(time.Hour + time.Second)
	if st := e.sweep(); st.Expired != scaleTasks {
		e.t.Fatalf("sweep expired %d tasks, want %d", st.Expired, scaleTasks)
	}
	h3 := heapNow()
	e.t.Logf("heap after expiry: %+d bytes from the start", int64(h3)-int64(h0))
}
