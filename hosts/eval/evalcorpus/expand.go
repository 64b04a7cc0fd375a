package evalcorpus

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
)

// PageChars is the length of a transcript page, in characters.
const PageChars = 3000

// turnPattern is a stored turn: "Speaker: text".
var turnPattern = regexp.MustCompile(`^([\p{Lu}][\p{L} .'-]{0,30}):\s+(\S.*)$`)

// Filler is the routine talk Load puts between a long meeting's
// substantive turns: greetings, audio trouble, scheduling, agenda chatter
// and small talk. No line states a requirement, a number or a decision. A
// meeting opens with the first line and closes with the last.
var Filler = []string{
	"Good morning, everyone.",
	"Hi all, sorry I'm a little late.",
	"Can everyone hear me all right?",
	"Yes, we can hear you fine.",
	"Sorry, I was on mute.",
	"You're breaking up a little.",
	"Let me share my screen.",
	"Can you see my screen now?",
	"I can see it, go ahead.",
	"Let's give people another minute to join.",
	"Is the recording on?",
	"Yes, the recording is on.",
	"I'll send the calendar invite after this call.",
	"Does the same time next week work for everyone?",
	"That slot works for me.",
	"I have a hard stop at the top of the hour.",
	"Shall we take a short break?",
	"Let's take a short break and come back after coffee.",
	"Welcome back, everyone.",
	"I'll move the follow-up to later in the week.",
	"Let's move on to the next item on the agenda.",
	"Let's go back to the agenda.",
	"I'll put that in the parking lot for now.",
	"Who is taking notes today?",
	"I'm taking notes in the shared document.",
	"Good point, let's note that and keep going.",
	"We're running a bit over on this item.",
	"Let's park that and come back to it later.",
	"How was everyone's weekend?",
	"Quiet, thanks for asking.",
	"The coffee machine is broken again.",
	"Thanks, that's helpful.",
	"Okay, thanks.",
	"Sounds good to me.",
	"Right, that makes sense.",
	"Let me just find the document.",
	"Sorry, go ahead.",
	"No, you go first.",
	"I'll follow up by email.",
	"Thanks, everyone, talk soon.",
}

// expand makes a meeting of pages pages from its stored substantive turns
// (see the package doc): the leading heading and blank lines as they are,
// then every turn with a timestamp, filler turns spread evenly between
// them. seed picks the filler; the same seed gives the same text.
func expand(seed, stored string, pages int) (string, error) {
	if pages < 1 {
		return "", fmt.Errorf("expand: %d pages", pages)
	}
	var head []string
	type turn struct{ speaker, text string }
	var turns []turn
	for l := range strings.SplitSeq(strings.TrimSpace(stored), "\n") {
		l = strings.TrimSpace(l)
		switch m := turnPattern.FindStringSubmatch(l); {
		case m != nil:
			turns = append(turns, turn{m[1], m[2]})
		case len(turns) == 0 && (l == "" || strings.HasPrefix(l, "#")):
			head = append(head, l)
		case l == "":
		default:
			return "", fmt.Errorf("expand: %q is not a \"Speaker: text\" turn", l)
		}
	}
	if len(turns) == 0 {
		return "", fmt.Errorf("expand: no turns")
	}
	speakers := []string{}
	for _, t := range turns {
		if !slices.Contains(speakers, t.speaker) {
			speakers = append(speakers, t.speaker)
		}
	}
	h := fnv.New64a()
	h.Write([]byte(seed))
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(pages)))

	var b strings.Builder
	for _, l := range head {
		b.WriteString(l + "\n")
	}
	substantive := 0
	for _, t := range turns {
		substantive += len(t.speaker) + len(t.text) + 14
	}
	target := pages * PageChars
	gap := max(target-b.Len()-substantive, 0) / (len(turns) + 1)
	seconds := 0
	say := func(speaker, text string) {
		fmt.Fprintf(&b, "[%02d:%02d:%02d] %s: %s\n", seconds/3600, seconds/60%60, seconds%60, speaker, text)
		seconds += 2 + len(text)/15
	}
	// The meeting opens with the first line of Filler and closes with its
	// last; the lines between are drawn at random.
	routine := Filler[1 : len(Filler)-1]
	fill := func(chars int) {
		for start := b.Len(); b.Len()-start < chars; {
			say(speakers[rng.IntN(len(speakers))], routine[rng.IntN(len(routine))])
		}
	}
	say(speakers[0], Filler[0])
	for _, t := range turns {
		fill(gap)
		say(t.speaker, t.text)
	}
	closing := len(speakers[0]) + len(Filler[len(Filler)-1]) + 14
	fill(max(target-b.Len()-closing, 0))
	say(speakers[0], Filler[len(Filler)-1])
	return b.String(), nil
}
