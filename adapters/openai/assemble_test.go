package openai

import (
	"slices"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

func idx(i int) *int { return &i }

func TestAssembler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frags []fragment
		want  []ports.ToolCall
	}{
		{
			name: "nothing",
			want: nil,
		},
		{
			name: "openai: header then arguments by index",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "get_weather"},
				{Index: idx(0), Arguments: `{"city":`},
				{Index: idx(0), Arguments: `"Paris"}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		},
		{
			name: "openai: parallel calls",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f"},
				{Index: idx(0), Arguments: `{"x":1}`},
				{Index: idx(1), ID: "b", Name: "g"},
				{Index: idx(1), Arguments: `{"y":2}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{"y":2}`}},
		},
		{
			name: "interleaved parallel calls",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f"},
				{Index: idx(1), ID: "b", Name: "g"},
				{Index: idx(1), Arguments: `{"y":`},
				{Index: idx(0), Arguments: `{"x":`},
				{Index: idx(0), Arguments: `1}`},
				{Index: idx(1), Arguments: `2}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{"y":2}`}},
		},
		{
			name: "first index above 0",
			frags: []fragment{
				{Index: idx(2), ID: "a", Name: "f"},
				{Index: idx(2), Arguments: `{}`},
				{Index: idx(5), ID: "b", Name: "g"},
				{Index: idx(5), Arguments: `[]`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{}`}, {ID: "b", Name: "g", Arguments: `[]`}},
		},
		{
			name: "ollama: no index, whole calls",
			frags: []fragment{
				{ID: "a", Name: "f", Arguments: `{"x":1}`},
				{ID: "b", Name: "g", Arguments: `{"y":2}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{"y":2}`}},
		},
		{
			name: "ollama: index 0 for every call",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f", Arguments: `{"x":1}`},
				{Index: idx(0), ID: "b", Name: "g", Arguments: `{"y":2}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{"y":2}`}},
		},
		{
			name: "repeated index with new ids, then pieces follow the newest",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f"},
				{Index: idx(0), Arguments: `{"x":1}`},
				{Index: idx(0), ID: "b", Name: "g"},
				{Index: idx(0), Arguments: `{"y":2}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{"y":2}`}},
		},
		{
			name: "vllm: duplicate entries for one index in a chunk",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f"},
				{Index: idx(0), Arguments: `{"x"`},
				{Index: idx(0), Arguments: `:1}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}},
		},
		{
			name: "no id and no index continues the last call",
			frags: []fragment{
				{ID: "a", Name: "f"},
				{Arguments: `{"x":`},
				{Arguments: `1}`},
				{ID: "b", Name: "g"},
				{Arguments: `{}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{}`}},
		},
		{
			name: "no id and no index continues the call touched last",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f"},
				{Index: idx(1), ID: "b", Name: "g"},
				{Index: idx(0), Arguments: `{"x":`},
				{Arguments: `1}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g"}},
		},
		{
			name: "id repeated on every fragment",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f", Arguments: `{"x":`},
				{Index: idx(0), ID: "a", Name: "f", Arguments: `1}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}},
		},
		{
			name: "known id without index",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f"},
				{Index: idx(1), ID: "b", Name: "g"},
				{ID: "a", Arguments: `{}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{}`}, {ID: "b", Name: "g"}},
		},
		{
			name: "same id reused at another index is another call",
			frags: []fragment{
				{Index: idx(0), ID: "call_0", Name: "f"},
				{Index: idx(0), Arguments: `{}`},
				{Index: idx(1), ID: "call_0", Name: "g"},
				{Index: idx(1), ID: "call_0", Arguments: `[]`},
			},
			want: []ports.ToolCall{{ID: "call_0", Name: "f", Arguments: `{}`}, {ID: "call_0", Name: "g", Arguments: `[]`}},
		},
		{
			name: "no ids, by index",
			frags: []fragment{
				{Index: idx(0), Name: "f"},
				{Index: idx(1), Name: "g"},
				{Index: idx(0), Arguments: `{}`},
				{Index: idx(1), Arguments: `[]`},
			},
			want: []ports.ToolCall{{Name: "f", Arguments: `{}`}, {Name: "g", Arguments: `[]`}},
		},
		{
			name: "an id arriving late completes the call at its index",
			frags: []fragment{
				{Index: idx(0), Name: "f", Arguments: `{`},
				{Index: idx(0), ID: "a", Arguments: `}`},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{}`}},
		},
		{
			name: "empty fragments are skipped",
			frags: []fragment{
				{Index: idx(0)},
				{},
				{Index: idx(1), ID: "a", Name: "f"},
				{Index: idx(1)},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f"}},
		},
		{
			name: "a repeated name is not doubled, a different one does not replace it",
			frags: []fragment{
				{Index: idx(0), ID: "a", Name: "f"},
				{Index: idx(0), Name: "f", Arguments: `{}`},
				{Index: idx(0), Name: "other"},
			},
			want: []ports.ToolCall{{ID: "a", Name: "f", Arguments: `{}`}},
		},
		{
			name: "arguments before anything else start a call",
			frags: []fragment{
				{Arguments: `{}`},
				{ID: "a", Name: "f"},
			},
			want: []ports.ToolCall{{Arguments: `{}`}, {ID: "a", Name: "f"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var a assembler
			for _, f := range tt.frags {
				a.add(f)
			}
			if got := a.result(); !slices.Equal(got, tt.want) {
				t.Errorf("calls\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestAssemblerResultIsACopy(t *testing.T) {
	t.Parallel()
	var a assembler
	a.add(fragment{Index: idx(0), ID: "a", Name: "f"})
	got := a.result()
	got[0].Name = "changed"
	a.add(fragment{Index: idx(0), Arguments: "{}"})
	if r := a.result(); r[0].Name != "f" || r[0].Arguments != "{}" {
		t.Errorf("result %+v", r)
	}
}
