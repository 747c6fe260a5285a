package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestSynthIsDeterministicAndShaped(t *testing.T) {
	a, b := newSynth(7), newSynth(7)
	ident := regexp.MustCompile(`^(svc|api|db|job|queue|cache)-\d+-[a-z]+$`)
	words := map[string]int{}
	idents, topics := 0, map[int]bool{}
	const n = 2000
	for range n {
		ta, ka := a.memory()
		tb, kb := b.memory()
		if ta != tb || ka != kb {
			t.Fatalf("same seed, different memories: %q / %q", ta, tb)
		}
		f := strings.Fields(ta)
		if len(f) < 8 || len(f) > 30 {
			t.Fatalf("memory of %d words: %q", len(f), ta)
		}
		topics[ka] = true
		for _, w := range f {
			words[w]++
			if ident.MatchString(w) {
				idents++
			}
		}
	}
	if len(topics) != topicCount {
		t.Errorf("%d topics used, want %d", len(topics), topicCount)
	}
	// About a quarter of memories carry an identifier.
	if idents < n/6 || idents > n/3 {
		t.Errorf("%d identifiers in %d memories", idents, n)
	}
	// Zipf: the most frequent word is far more common than the median one.
	top := 0
	for _, c := range words {
		top = max(top, c)
	}
	if top < 200 {
		t.Errorf("most frequent word seen %d times: no Zipf head", top)
	}
	if q := newSynth(7).query(); q == "" || q != newSynth(7).query() {
		t.Errorf("queries differ for one seed: %q", q)
	}
	if ta, _ := newSynth(8).memory(); ta == func() string { s, _ := newSynth(7).memory(); return s }() {
		t.Error("different seeds gave the same first memory")
	}
}
