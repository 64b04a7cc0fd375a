// Package linediff compares two texts line by line and writes the result as
// a unified diff. It is pure and domain-neutral: a longest common
// subsequence of the lines after their common prefix and suffix are set
// aside, bounded so a large change costs bounded memory.
package linediff

import (
	"fmt"
	"strings"
)

// MaxCells bounds the LCS table (lines changed in a × lines changed in b);
// past it the changed middle is shown as all of a's lines removed and all
// of b's added, which is a correct if coarse diff.
const MaxCells = 4 << 20

// op is one line of the edit script: ' ' kept, '-' removed, '+' added.
type op struct {
	kind byte
	line string
}

// Unified returns the unified diff (context lines of context around each
// change, "---"/"+++" headers naming fromName and toName) that turns a into
// b; "" when they are equal.
func Unified(fromName, toName, a, b string, context int) string {
	if a == b {
		return ""
	}
	ops := script(splitLines(a), splitLines(b))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
	// Positions (1-based line numbers) before each op in a and b.
	ai, bi := make([]int, len(ops)+1), make([]int, len(ops)+1)
	ai[0], bi[0] = 1, 1
	for i, o := range ops {
		ai[i+1], bi[i+1] = ai[i], bi[i]
		if o.kind != '+' {
			ai[i+1]++
		}
		if o.kind != '-' {
			bi[i+1]++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		// Extend the hunk while the next change is within 2×context kept lines.
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*context {
				break
			}
		}
		stop := min(end+context, len(ops))
		var na, nb int
		for _, o := range ops[start:stop] {
			if o.kind != '+' {
				na++
			}
			if o.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(ai[start], na), hunkRange(bi[start], nb))
		for _, o := range ops[start:stop] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		i = stop
	}
	return out.String()
}

// hunkRange is a hunk header's "start,count" (start is the line before an
// empty range, as diff -u writes it).
func hunkRange(start, n int) string {
	if n == 0 {
		start--
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// script is an edit script from a to b.
func script(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for _, l := range a[:pre] {
		ops = append(ops, op{' ', l})
	}
	ops = append(ops, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

// middle diffs the changed middle by a longest common subsequence.
func middle(a, b []string) []op {
	n, m := len(a), len(b)
	var ops []op
	if n*m > MaxCells {
		for _, l := range a {
			ops = append(ops, op{'-', l})
		}
		for _, l := range b {
			ops = append(ops, op{'+', l})
		}
		return ops
	}
	// lcs[i*(m+1)+j] is the LCS length of a[i:] and b[j:].
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, op{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, op{'+', b[j]})
	}
	return ops
}
