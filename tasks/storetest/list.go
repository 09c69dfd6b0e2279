package storetest

import (
	"slices"
	"time"

	"github.com/gopmcp/pmcp/tasks"
)

// listAll pages through owner's tasks with limit, calling between after
// every page, and returns the ids in the order listed.
func (e *env) listAll(owner string, limit int, between func(page int)) []string {
	e.t.Helper()
	var ids []string
	cursor := ""
	for page := 0; ; page++ {
		p, err := e.s.List(e.ctx, owner, cursor, limit)
		if err != nil {
			e.t.Fatalf("List page %d: %v", page, err)
		}
		for _, task := range p.Tasks {
			if task.Owner != owner {
				e.t.Fatalf("List(%q) returned a task of %q", owner, task.Owner)
			}
			ids = append(ids, task.ID)
		}
		if p.NextCursor == "" {
			return ids
		}
		if len(p.Tasks) == 0 {
			e.t.Fatalf("empty page %d with a next cursor", page)
		}
		if page > 1000 {
			e.t.Fatal("List does not terminate")
		}
		cursor = p.NextCursor
		if between != nil {
			between(page)
		}
	}
}

func testList(e *env) {
	if p, err := e.s.List(e.ctx, alice, "", 0); err != nil || len(p.Tasks) != 0 || p.NextCursor != "" {
		e.t.Fatalf("empty List: %+v, %v", p, err)
	}
	var want []string
	for i := range 25 {
		want = append(want, e.create(alice, tasks.Spec{}).ID)
		if i%3 == 0 {
			e.create(bob, tasks.Spec{})
		}
		e.clock.Advance(time.Millisecond)
	}
	// Default and clamped page sizes are Options.PageSize (7 here).
	for _, limit := range []int{0, 100} {
		p, err := e.s.List(e.ctx, alice, "", limit)
		if err != nil || len(p.Tasks) != 7 || p.NextCursor == "" {
			e.t.Fatalf("List limit %d: %d tasks, cursor %q, %v", limit, len(p.Tasks), p.NextCursor, err)
		}
	}
	for _, limit := range []int{1, 3, 7, 25} {
		if got := e.listAll(alice, limit, nil); !slices.Equal(got, want) {
			e.t.Fatalf("limit %d: listed %d tasks out of creation order or with gaps", limit, len(got))
		}
	}
	// An exact multiple of the page size ends without an empty page.
	p, err := e.s.List(e.ctx, alice, "", 5)
	for p.NextCursor != "" && err == nil {
		p, err = e.s.List(e.ctx, alice, p.NextCursor, 5)
		if len(p.Tasks) == 0 {
			e.t.Fatal("a page of 0 tasks after a non-empty cursor")
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range []string{"garbage", "!!!!", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", " "} {
		_, err := e.s.List(e.ctx, alice, c, 0)
		e.wantErr("List with cursor "+c, err, tasks.ErrInvalidCursor)
	}
	_, err = e.s.List(e.ctx, "", "", 0)
	e.wantErr("List with no owner", err, tasks.ErrInvalid)
}

func testListChanging(e *env) {
	var want []string
	var doomed []string
	for i := range 12 {
		ttl := time.Hour
		if i%4 == 1 {
			ttl = 10 * time.Millisecond
		}
		task := e.create(alice, tasks.Spec{TTL: ttl})
		if ttl == time.Hour {
			want = append(want, task.ID)
		} else {
			doomed = append(doomed, task.ID)
		}
	}
	e.clock.Advance(time.Millisecond)
	var added []string
	got := e.listAll(alice, 0, func(page int) {
		// Between pages: tasks change status, some expire, new ones
		// arrive. None may be listed twice or skipped.
		switch page {
		case 0:
			e.update(alice, want[1], complete(`{}`))
			e.update(alice, want[5], tasks.Change{To: tasks.StatusInputRequired})
			e.clock.Advance(20 * time.Millisecond)
			e.sweep()
		case 1:
			added = append(added, e.create(alice, tasks.Spec{}).ID, e.create(alice, tasks.Spec{}).ID)
		}
	})
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			e.t.Fatalf("task %s listed twice", id)
		}
		seen[id] = true
	}
	for _, id := range append(want, added...) {
		if !seen[id] {
			e.t.Fatalf("live task %s was skipped while paging", id)
		}
	}
	for i, id := range doomed {
		// The first doomed task was on page 0 (listed before it
		// expired); later ones expired before their page.
		if i > 0 && seen[id] {
			e.t.Fatalf("expired task %s was listed after the sweep", id)
		}
	}
}
