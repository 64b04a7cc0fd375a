package llmroute

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The structured output modes a model's capabilities may name: OpenAI's
// json_schema strict or lenient, its json_object, or a forced tool call
// carrying the schema (Anthropic, Bedrock).
const (
	StructuredStrict     = "strict"
	StructuredLenient    = "lenient"
	StructuredJSONObject = "json_object"
	StructuredTool       = "tool"
)

// StructuredModes lists the structured output modes.
var StructuredModes = []string{StructuredStrict, StructuredLenient, StructuredJSONObject, StructuredTool}

// Capability is what one model can do; a zero field is unknown (the
// adapter's or the provider's default applies).
type Capability struct {
	// ContextWindow is the model's context window, in tokens.
	ContextWindow int
	// MaxOutput bounds a completion's tokens: a call asking for more (or
	// for no bound) is sent this bound.
	MaxOutput int
	// Structured is how structured output is asked of the model (one of
	// StructuredModes).
	Structured string
}

// Capabilities holds models' capabilities by model id.
type Capabilities map[string]Capability

// For returns model's capabilities: its own entry, else that of the
// longest known prefix of its id (so "claude-sonnet-4-5" covers
// "claude-sonnet-4-5-20250929", and a Bedrock id's region prefix is
// ignored: "us.anthropic.claude-sonnet-4-5…" reads as
// "anthropic.claude-sonnet-4-5…"); the zero Capability when none matches.
func (c Capabilities) For(model string) Capability {
	if cap, ok := c[model]; ok {
		return cap
	}
	best, found := "", false
	for _, id := range []string{model, stripBedrockRegion(model)} {
		for known := range c {
			if strings.HasPrefix(id, known) && len(known) > len(best) {
				best, found = known, true
			}
		}
	}
	if !found {
		return Capability{}
	}
	return c[best]
}

// stripBedrockRegion drops the geography prefix of a Bedrock
// cross-region inference profile ("us.", "eu.", "apac.", "global.").
func stripBedrockRegion(model string) string {
	for _, p := range []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au."} {
		if rest, ok := strings.CutPrefix(model, p); ok {
			return rest
		}
	}
	return model
}

// DefaultCapabilities returns the built-in capabilities of well-known
// models (prefixes of their ids); ParseCapabilities's entries override
// them field by field (an entry starts from what For gave its model).
func DefaultCapabilities() Capabilities {
	return Capabilities{
		"gpt-4o":                      {ContextWindow: 128_000, MaxOutput: 16_384},
		"gpt-4.1":                     {ContextWindow: 1_047_576, MaxOutput: 32_768},
		"gpt-5":                       {ContextWindow: 400_000, MaxOutput: 128_000},
		"o3":                          {ContextWindow: 200_000, MaxOutput: 100_000},
		"o4-mini":                     {ContextWindow: 200_000, MaxOutput: 100_000},
		"claude-sonnet-4":             {ContextWindow: 200_000, MaxOutput: 64_000, Structured: StructuredTool},
		"claude-opus-4":               {ContextWindow: 200_000, MaxOutput: 32_000, Structured: StructuredTool},
		"claude-haiku-4":              {ContextWindow: 200_000, MaxOutput: 64_000, Structured: StructuredTool},
		"claude-3-5-haiku":            {ContextWindow: 200_000, MaxOutput: 8_192, Structured: StructuredTool},
		"claude-3-7-sonnet":           {ContextWindow: 200_000, MaxOutput: 64_000, Structured: StructuredTool},
		"anthropic.claude-sonnet-4":   {ContextWindow: 200_000, MaxOutput: 64_000, Structured: StructuredTool},
		"anthropic.claude-opus-4":     {ContextWindow: 200_000, MaxOutput: 32_000, Structured: StructuredTool},
		"anthropic.claude-haiku-4":    {ContextWindow: 200_000, MaxOutput: 64_000, Structured: StructuredTool},
		"anthropic.claude-3-5-haiku":  {ContextWindow: 200_000, MaxOutput: 8_192, Structured: StructuredTool},
		"anthropic.claude-3-7-sonnet": {ContextWindow: 200_000, MaxOutput: 64_000, Structured: StructuredTool},
		"amazon.nova":                 {ContextWindow: 300_000, MaxOutput: 10_000, Structured: StructuredTool},
		"meta.llama":                  {ContextWindow: 128_000, MaxOutput: 8_192, Structured: StructuredTool},
		"mistral.":                    {ContextWindow: 128_000, MaxOutput: 8_192, Structured: StructuredTool},
	}
}

// ParseCapabilities parses per-model capabilities,
// "model=key:value,key:value[;model=…]" with keys context (tokens),
// max_output (tokens) and structured (one of StructuredModes), and
// returns base (nil: none) with them laid over it field by field. It is
// strict: an unknown key, a bad number, a model named twice or an empty
// entry is an error saying which.
func ParseCapabilities(s string, base Capabilities) (Capabilities, error) {
	out := maps.Clone(base)
	if out == nil {
		out = Capabilities{}
	}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(s, ";") {
		entry = strings.TrimSpace(entry)
		model, list, ok := strings.Cut(entry, "=")
		model, list = strings.TrimSpace(model), strings.TrimSpace(list)
		switch {
		case entry == "":
			return nil, fmt.Errorf("%q has an empty entry", s)
		case !ok || model == "" || list == "":
			return nil, fmt.Errorf("%q: entry %q is not model=key:value[,key:value…]", s, entry)
		case seen[model]:
			return nil, fmt.Errorf("%q names model %q twice", s, model)
		}
		seen[model] = true
		c := out.For(model)
		keys := map[string]bool{}
		for kv := range strings.SplitSeq(list, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("%q: %q of model %q is not key:value", s, kv, model)
			}
			if keys[k] {
				return nil, fmt.Errorf("%q: model %q gives %s twice", s, model, k)
			}
			keys[k] = true
			switch k {
			case "context", "max_output":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 100_000_000 {
					return nil, fmt.Errorf("%q: %s of model %q is %q, not a number of tokens from 1 to 100000000", s, k, model, v)
				}
				if k == "context" {
					c.ContextWindow = n
				} else {
					c.MaxOutput = n
				}
			case "structured":
				if !slices.Contains(StructuredModes, v) {
					return nil, fmt.Errorf("%q: structured of model %q is %q, not one of %s", s, model, v, strings.Join(StructuredModes, ", "))
				}
				c.Structured = v
			default:
				return nil, fmt.Errorf("%q: unknown key %q for model %q (context, max_output, structured)", s, k, model)
			}
		}
		out[model] = c
	}
	return out, nil
}
