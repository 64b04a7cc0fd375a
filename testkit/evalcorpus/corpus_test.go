package evalcorpus

import "testing"

func TestLoadReadsEveryCase(t *testing.T) {
	cases, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cases {
		if c.Title == "" || len(c.Facts) == 0 {
			t.Errorf("case %s: no title or no facts", c.ID)
		}
		for _, in := range c.Inputs {
			if in.Content == "" {
				t.Errorf("case %s: input %s is empty", c.ID, in.Name)
			}
		}
	}
}

func TestFactFoundIn(t *testing.T) {
	f := Fact{Terms: []string{"seven years|7 years", "Receipt"}}
	for text, want := range map[string]bool{
		"Receipts are kept for SEVEN\n years.": true,
		"receipts: 7 years":                    true,
		"receipts are kept for a while":        false,
		"seven years":                          false,
	} {
		if got := f.FoundIn(text); got != want {
			t.Errorf("FoundIn(%q) = %v, want %v", text, got, want)
		}
	}
	if (Fact{}).FoundIn("anything") {
		t.Error("a fact without terms is found")
	}
}
