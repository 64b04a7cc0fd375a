package spec

import (
	"context"
	"log/slog"

	"github.com/devpilot/devpilot/ports"
)

// askWithinBudget asks for args.Stage from the raw inputs and the earlier
// artifacts, repairing findings once.
func (s *Service) askWithinBudget(ctx context.Context, args GenerateStageArgs, inputs []ports.SpecInput,
	before map[ports.Stage]ports.SpecArtifact, standards []ports.Standard, findings findingsFunc, log *slog.Logger) (output, ports.ChatResult, error) {
	return s.askRepairing(ctx, args.Stage, buildMessages(args.Stage, inputs, before, standards), findings, log)
}
