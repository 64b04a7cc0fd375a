package aws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/devpilot/devpilot/ports"
)

const lambdaListPage = 50

// ListFunctions returns every Lambda function of the region. ListFunctions
// does not report a function's state, so State is empty unless Lambda sends
// it. Errors: as CloudProvider.
func (p *Provider) ListFunctions(ctx context.Context, c ports.CloudCredentials) ([]ports.Function, error) {
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var fns []ports.Function
	pages := lambda.NewListFunctionsPaginator(lambda.NewFromConfig(s.cfg), &lambda.ListFunctionsInput{MaxItems: sdkaws.Int32(lambdaListPage)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.fail(ctx, s, err, nil)
		}
		for _, f := range out.Functions {
			fns = append(fns, function(f))
		}
	}
	if fns == nil {
		fns = []ports.Function{}
	}
	return fns, nil
}

func function(f lambdatypes.FunctionConfiguration) ports.Function {
	out := ports.Function{
		Name:        sdkaws.ToString(f.FunctionName),
		ARN:         sdkaws.ToString(f.FunctionArn),
		Runtime:     string(f.Runtime),
		State:       string(f.State),
		MemoryMB:    int(sdkaws.ToInt32(f.MemorySize)),
		TimeoutSecs: int(sdkaws.ToInt32(f.Timeout)),
		LogGroup:    logGroup(f),
	}
	if lm := sdkaws.ToString(f.LastModified); lm != "" {
		for _, layout := range []string{"2006-01-02T15:04:05.000-0700", "2006-01-02T15:04:05-0700", time.RFC3339Nano} {
			if t, err := time.Parse(layout, lm); err == nil {
				out.LastModified = t.UTC()
				break
			}
		}
	}
	return out
}

// logGroup is the function's log group: its logging configuration's, else
// Lambda's default.
func logGroup(f lambdatypes.FunctionConfiguration) string {
	if f.LoggingConfig != nil && sdkaws.ToString(f.LoggingConfig.LogGroup) != "" {
		return sdkaws.ToString(f.LoggingConfig.LogGroup)
	}
	return "/aws/lambda/" + sdkaws.ToString(f.FunctionName)
}

// InvokeFunction invokes a Lambda function synchronously with its log tail
// (or, with dryRun, only checks that it could). A function's own failure is
// reported in FunctionError; an answer that is not JSON is returned as a
// JSON string. Errors: invalid for a payload that is not JSON, not_found for
// a missing function, else as CloudProvider.
func (p *Provider) InvokeFunction(ctx context.Context, c ports.CloudCredentials, name string, payload json.RawMessage, dryRun bool) (ports.Invocation, error) {
	if name == "" {
		return ports.Invocation{}, ports.Invalid("aws: a function name is required")
	}
	if len(payload) > 0 && !json.Valid(payload) {
		return ports.Invocation{}, ports.Invalid("aws: the payload is not JSON", ports.FieldError{Field: "payload", Reason: "invalid_json"})
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return ports.Invocation{}, err
	}
	defer cancel()
	in := &lambda.InvokeInput{
		FunctionName:   sdkaws.String(name),
		InvocationType: lambdatypes.InvocationTypeRequestResponse,
		LogType:        lambdatypes.LogTypeTail,
		Payload:        payload,
	}
	if dryRun {
		in.InvocationType = lambdatypes.InvocationTypeDryRun
	}
	out, err := lambda.NewFromConfig(s.cfg).Invoke(ctx, in)
	if err != nil {
		return ports.Invocation{}, p.fail(ctx, s, err, resources{"": "function " + name})
	}
	inv := ports.Invocation{StatusCode: int(out.StatusCode), FunctionError: sdkaws.ToString(out.FunctionError)}
	if lr := sdkaws.ToString(out.LogResult); lr != "" {
		if tail, err := base64.StdEncoding.DecodeString(lr); err == nil {
			inv.LogTail = string(tail)
		} else {
			inv.LogTail = lr
		}
	}
	if len(out.Payload) > 0 {
		if json.Valid(out.Payload) {
			inv.Payload = json.RawMessage(out.Payload)
		} else {
			quoted, err := json.Marshal(string(out.Payload))
			if err != nil {
				return ports.Invocation{}, ports.Wrap(ports.KindInternal, err, "aws: encoding the function's answer")
			}
			inv.Payload = quoted
		}
	}
	return inv, nil
}

// FunctionLogs returns the newest log events of a Lambda function, from its
// log group. Errors: not_found for a missing function or log group, else as
// CloudProvider.
func (p *Provider) FunctionLogs(ctx context.Context, c ports.CloudCredentials, name string, q ports.LogQuery) ([]ports.LogEvent, error) {
	if name == "" {
		return nil, ports.Invalid("aws: a function name is required")
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	out, err := lambda.NewFromConfig(s.cfg).GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: sdkaws.String(name)})
	if err != nil {
		return nil, p.fail(ctx, s, err, resources{"": "function " + name})
	}
	cfg := lambdatypes.FunctionConfiguration{FunctionName: out.FunctionName, LoggingConfig: out.LoggingConfig}
	if cfg.FunctionName == nil {
		cfg.FunctionName = sdkaws.String(name)
	}
	return p.filterLogs(ctx, s, "", logGroup(cfg), "", q)
}
