package fakeaws

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

func (s *Server) routeLambda(rq *request, path string) (handler, *apiError) {
	parts, ok := splitPath(path)
	if !ok || len(parts) < 2 || parts[1] != "functions" {
		return nil, errf(http.StatusNotFound, "UnknownOperationException", "fakeaws: no Lambda operation serves %s", path)
	}
	method := rq.r.Method
	var labels map[string]string
	if len(parts) > 2 {
		labels = map[string]string{"FunctionName": parts[2]}
	}
	var h handler
	switch {
	case len(parts) == 2 && method == http.MethodGet:
		rq.operation, h = "ListFunctions", lambdaListFunctions
	case len(parts) == 3 && method == http.MethodGet:
		rq.operation, h = "GetFunction", lambdaGetFunction
	case len(parts) == 4 && parts[3] == "configuration" && method == http.MethodGet:
		rq.operation, h = "GetFunctionConfiguration", lambdaGetFunctionConfiguration
	case len(parts) == 4 && parts[3] == "invocations" && method == http.MethodPost:
		rq.operation, h = "Invoke", lambdaInvoke
	default:
		return nil, errf(http.StatusNotFound, "UnknownOperationException", "fakeaws: no Lambda operation serves %s %s", method, path)
	}
	rq.restInput(labels)
	if rq.operation == "Invoke" {
		for header, member := range map[string]string{
			"X-Amz-Invocation-Type": "InvocationType", "X-Amz-Log-Type": "LogType", "X-Amz-Client-Context": "ClientContext",
		} {
			if v := rq.r.Header.Get(header); v != "" {
				rq.input[member] = v
			}
		}
		rq.input["Payload"] = string(rq.body)
	}
	return h, nil
}

// lambdaFunctionName is the function name of a name, ARN or partial ARN,
// without a qualifier.
func lambdaFunctionName(ref string) string {
	if _, after, ok := strings.Cut(ref, ":function:"); ok {
		ref = after
	}
	name, _, _ := strings.Cut(ref, ":")
	return name
}

func lambdaARN(rq *request, name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", rq.region, rq.account().id, name)
}

// lambdaFunction finds the function the request's path names; the caller
// holds the lock.
func lambdaFunction(rq *request) (*Function, *apiError) {
	name := lambdaFunctionName(str(rq.input, "FunctionName"))
	f := rq.account().functions[name]
	if f == nil {
		return nil, errf(http.StatusNotFound, "ResourceNotFoundException", "Function not found: %s", lambdaARN(rq, name))
	}
	return f, nil
}

func lambdaConfiguration(rq *request, f *Function, full bool) map[string]any {
	cfg := map[string]any{
		"FunctionName":     f.Name,
		"FunctionArn":      lambdaARN(rq, f.Name),
		"Runtime":          f.Runtime,
		"Role":             fmt.Sprintf("arn:aws:iam::%s:role/%s-role", rq.account().id, f.Name),
		"Handler":          f.Handler,
		"CodeSize":         1024,
		"Description":      "",
		"Timeout":          f.TimeoutSecs,
		"MemorySize":       f.MemoryMB,
		"LastModified":     f.LastModified.UTC().Format("2006-01-02T15:04:05.000-0700"),
		"CodeSha256":       "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
		"Version":          "$LATEST",
		"TracingConfig":    map[string]any{"Mode": "PassThrough"},
		"RevisionId":       "00000000-0000-4000-8000-000000000000",
		"PackageType":      "Zip",
		"Architectures":    []any{"x86_64"},
		"EphemeralStorage": map[string]any{"Size": 512},
		"SnapStart":        map[string]any{"ApplyOn": "None", "OptimizationStatus": "Off"},
		"LoggingConfig":    map[string]any{"LogFormat": "Text", "LogGroup": f.LogGroup},
	}
	if full {
		// ListFunctions leaves out the state fields; the Get operations
		// report them.
		cfg["State"] = f.State
		cfg["LastUpdateStatus"] = "Successful"
	}
	return cfg
}

func lambdaListFunctions(rq *request) (*reply, *apiError) {
	limit, _, aerr := num(rq.input, "MaxItems")
	if aerr != nil {
		return nil, aerr
	}
	if limit < 0 || limit > 10000 {
		return nil, errf(http.StatusBadRequest, "InvalidParameterValueException", "MaxItems must be between 1 and 10000")
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	var fns []*Function
	for _, n := range sortedKeys(rq.account().functions) {
		fns = append(fns, rq.account().functions[n])
	}
	start, end, next, aerr := rq.s.page("ListFunctions", str(rq.input, "Marker"), len(fns), int(limit), 50)
	if aerr != nil {
		aerr.code = "InvalidParameterValueException"
		return nil, aerr
	}
	configs := []any{}
	for _, f := range fns[start:end] {
		configs = append(configs, lambdaConfiguration(rq, f, false))
	}
	out := map[string]any{"Functions": configs}
	if next != "" {
		out["NextMarker"] = next
	}
	return &reply{body: out}, nil
}

func lambdaGetFunctionConfiguration(rq *request) (*reply, *apiError) {
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	f, aerr := lambdaFunction(rq)
	if aerr != nil {
		return nil, aerr
	}
	return &reply{body: lambdaConfiguration(rq, f, true)}, nil
}

func lambdaGetFunction(rq *request) (*reply, *apiError) {
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	f, aerr := lambdaFunction(rq)
	if aerr != nil {
		return nil, aerr
	}
	return &reply{body: map[string]any{
		"Configuration": lambdaConfiguration(rq, f, true),
		"Code":          map[string]any{"RepositoryType": "S3", "Location": "https://example.invalid/code.zip"},
	}}, nil
}

func lambdaInvoke(rq *request) (*reply, *apiError) {
	rq.s.mu.Lock()
	f, aerr := lambdaFunction(rq)
	var fn Function
	if f != nil {
		fn = *f
	}
	rq.s.mu.Unlock()
	if aerr != nil {
		return nil, aerr
	}
	if len(rq.body) > 0 && !json.Valid(rq.body) {
		return nil, errf(http.StatusBadRequest, "InvalidRequestContentException",
			"Could not parse request body into json: Could not parse payload into json")
	}
	switch typ := str(rq.input, "InvocationType"); typ {
	case "DryRun":
		return &reply{status: http.StatusNoContent}, nil
	case "Event":
		return &reply{status: http.StatusAccepted}, nil
	case "", "RequestResponse":
	default:
		return nil, errf(http.StatusBadRequest, "InvalidParameterValueException", "Unsupported invocation type %s", typ)
	}
	res := fn.Result
	if fn.Handle != nil {
		res = fn.Handle(rq.body)
	}
	payload := res.Payload
	if len(payload) == 0 {
		payload = []byte("null")
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Amz-Executed-Version", "$LATEST")
	if res.FunctionError != "" {
		h.Set("X-Amz-Function-Error", res.FunctionError)
	}
	if str(rq.input, "LogType") == "Tail" {
		tail := res.LogTail
		if len(tail) > 4096 {
			tail = tail[len(tail)-4096:]
		}
		h.Set("X-Amz-Log-Result", base64.StdEncoding.EncodeToString([]byte(tail)))
	}
	return &reply{status: http.StatusOK, header: h, body: payload}, nil
}
