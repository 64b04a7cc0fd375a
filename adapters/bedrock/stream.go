package bedrock

import (
	"context"
	"errors"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/devpilot/devpilot/ports"
)

// errNoMessageStop is the cause of a stream that ended before messageStop.
var errNoMessageStop = errors.New("bedrock: the stream ended without messageStop")

// toolBlock is a toolUse content block being received.
type toolBlock struct {
	id, name string
	input    strings.Builder
}

// stream sends in and reads its event stream into res. structured is the
// name of the tool carrying the response format, "" for none. It returns
// a *callerError for onDelta's error, and the SDK's error otherwise.
func (c *Client) stream(ctx context.Context, in *bedrockruntime.ConverseStreamInput, structured string, onDelta func(string) error, res *ports.ChatResult) error {
	out, err := c.newAPI().ConverseStream(ctx, in)
	if err != nil {
		return err
	}
	if id, ok := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata); ok {
		res.ID = id
	}
	es := out.GetStream()
	defer es.Close()

	var (
		content  strings.Builder // text, or the structured answer
		plain    strings.Builder // text of a structured answer's turn
		blocks   = map[int32]*toolBlock{}
		order    []int32
		stop     types.StopReason
		stopped  bool
		usage    ports.Usage
		answered bool // the structured tool was used
		emit     = func(s string) error {
			if s == "" {
				return nil
			}
			content.WriteString(s)
			res.Content = content.String()
			if onDelta != nil {
				if err := onDelta(s); err != nil {
					return &callerError{err: err}
				}
			}
			return nil
		}
	)
	for ev := range es.Events() {
		switch e := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			if tu, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				idx := index(e.Value.ContentBlockIndex)
				b := &toolBlock{id: deref(tu.Value.ToolUseId), name: deref(tu.Value.Name)}
				if _, dup := blocks[idx]; !dup {
					order = append(order, idx)
				}
				blocks[idx] = b
				if structured != "" && b.name == structured {
					answered = true
				}
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			idx := index(e.Value.ContentBlockIndex)
			switch d := e.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				s := ports.CleanText(d.Value)
				if structured != "" {
					plain.WriteString(s)
					continue
				}
				if err := emit(s); err != nil {
					return err
				}
			case *types.ContentBlockDeltaMemberToolUse:
				b := blocks[idx]
				if b == nil { // a delta without its start: keep it all the same
					b = &toolBlock{}
					blocks[idx] = b
					order = append(order, idx)
				}
				piece := deref(d.Value.Input)
				if structured != "" && b.name == structured {
					if err := emit(ports.CleanText(piece)); err != nil {
						return err
					}
					continue
				}
				b.input.WriteString(piece)
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			stop, stopped = e.Value.StopReason, true
		case *types.ConverseStreamOutputMemberMetadata:
			if tr := e.Value.Trace; tr != nil && tr.PromptRouter != nil && deref(tr.PromptRouter.InvokedModelId) != "" {
				// A prompt router names the model that answered.
				res.Model = *tr.PromptRouter.InvokedModelId
			}
			if u := e.Value.Usage; u != nil {
				read, write := int(deref(u.CacheReadInputTokens)), int(deref(u.CacheWriteInputTokens))
				usage = ports.Usage{
					PromptTokens:     int(deref(u.InputTokens)) + read + write,
					CompletionTokens: int(deref(u.OutputTokens)),
					CacheReadTokens:  read,
					CacheWriteTokens: write,
				}
			}
		}
	}
	if err := es.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !stopped {
		return errNoMessageStop
	}
	if structured != "" && !answered {
		// A model that answered in text despite the forced tool.
		if err := emit(plain.String()); err != nil {
			return err
		}
	}
	if structured != "" {
		res.Content = string(ports.CleanJSON([]byte(content.String())))
	} else {
		res.Content = content.String()
	}
	for _, idx := range order {
		b := blocks[idx]
		if structured != "" && b.name == structured {
			continue
		}
		args := strings.TrimSpace(b.input.String())
		if args == "" {
			args = "{}"
		}
		res.ToolCalls = append(res.ToolCalls, ports.ToolCall{ID: b.id, Name: b.name, Arguments: string(ports.CleanJSON([]byte(args)))})
	}
	res.FinishReason = finishReason(stop, len(res.ToolCalls) > 0)
	res.Usage = usage
	return nil
}

// finishReason maps Bedrock's stop reason. A structured answer's tool_use
// is a stop: its tool call is the answer.
func finishReason(r types.StopReason, hasCalls bool) ports.FinishReason {
	switch r {
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		return ports.FinishLength
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return ports.FinishContentFilter
	}
	if hasCalls {
		return ports.FinishToolCalls
	}
	return ports.FinishStop
}

func index(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
