package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// "Did you mean": the close known name of a mistyped one.

// maxSuggestNames bounds how many known names closest compares against
// (a server's tool list is the server's to size).
const maxSuggestNames = 10000

// closest returns the known name nearest to name when it is close enough
// to be a typo: an edit distance (case-insensitive) of at most a third of
// the name's length, at least 1, with a single best; else "".
func closest(name string, known []string) string {
	if len(known) > maxSuggestNames {
		known = known[:maxSuggestNames]
	}
	limit := max(1, len([]rune(name))/3)
	best, bestD, tie := "", limit+1, false
	for _, k := range known {
		d := editDistance(strings.ToLower(name), strings.ToLower(k), limit)
		switch {
		case d < bestD:
			best, bestD, tie = k, d, false
		case d == bestD:
			tie = true
		}
	}
	if best == "" || tie {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit+1 once
// it is known to exceed limit.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if abs(len(ra)-len(rb)) > limit {
		return limit + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// didYouMean is " (did you mean "X"?)" for the close known name, or "".
func didYouMean(name string, known []string) string {
	if c := closest(name, known); c != "" {
		return fmt.Sprintf("did you mean %q?", c)
	}
	return ""
}

// unknownTool adds to a call's invalid-params error, when the server has
// no tool of that name, the close name it has (or where the names are).
func unknownTool(ctx context.Context, s *pmcp.ClientSession, name string, err error) error {
	var re *jsonrpc.Error
	if !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams {
		return err
	}
	tools, lerr := s.AllTools(ctx)
	if lerr != nil {
		return err
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if t.Name == name {
			return err // the tool exists: its arguments were wrong
		}
		names = append(names, t.Name)
	}
	if hint := didYouMean(name, names); hint != "" {
		return fmt.Errorf("%w: %s", err, hint)
	}
	return fmt.Errorf("%w (pmcp tools list lists the tools)", err)
}
