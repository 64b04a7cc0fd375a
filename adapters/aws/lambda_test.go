package aws_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

var modified = time.Date(2026, 1, 1, 12, 30, 45, 123e6, time.UTC)

func seedFunctions(f *fakeaws.Server) {
	acct := f.Account(userAccount)
	for _, name := range []string{"fn-a", "fn-c", "fn-d", "fn-e"} {
		acct.Function(fakeaws.Function{Name: name, Runtime: "nodejs22.x", MemoryMB: 128, TimeoutSecs: 3, LastModified: modified})
	}
	acct.Function(fakeaws.Function{
		Name: "fn-b", Runtime: "python3.13", MemoryMB: 256, TimeoutSecs: 30, LastModified: modified, LogGroup: "/custom/fn-b",
	})
}

func TestListFunctions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedFunctions(e.fake)
	e.fake.MaxPageSize(2)
	fns, err := e.p.ListFunctions(context.Background(), keyCreds())
	if err != nil {
		t.Fatalf("ListFunctions: %v", err)
	}
	if len(fns) != 5 {
		t.Fatalf("functions = %d, want 5", len(fns))
	}
	want := []ports.Function{
		{
			Name: "fn-a", ARN: "arn:aws:lambda:" + region + ":" + userAccount + ":function:fn-a", Runtime: "nodejs22.x",
			MemoryMB: 128, TimeoutSecs: 3, LastModified: modified, LogGroup: "/aws/lambda/fn-a",
		},
		{
			Name: "fn-b", ARN: "arn:aws:lambda:" + region + ":" + userAccount + ":function:fn-b", Runtime: "python3.13",
			MemoryMB: 256, TimeoutSecs: 30, LastModified: modified, LogGroup: "/custom/fn-b",
		},
	}
	if !reflect.DeepEqual(fns[:2], want) {
		t.Errorf("functions =\n%+v\nwant\n%+v", fns[:2], want)
	}
	calls := e.fake.CallsTo(fakeaws.ServiceLambda, "ListFunctions")
	if len(calls) != 3 {
		t.Fatalf("ListFunctions calls = %d, want 3 pages", len(calls))
	}
	if calls[0].Input["MaxItems"] != "50" || calls[1].Input["Marker"] == nil {
		t.Errorf("ListFunctions inputs = %v, %v", calls[0].Input, calls[1].Input)
	}
}

func TestInvokeFunction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fn       fakeaws.Function
		invoke   string
		payload  string
		dryRun   bool
		want     ports.Invocation
		wantType string
		kind     ports.Kind
		calls    int
	}{
		{
			name:    "JSON answer",
			fn:      fakeaws.Function{Name: "f", Result: fakeaws.InvokeResult{Payload: []byte(`{"ok":true}`), LogTail: "START\nEND\n"}},
			payload: `{"n":1}`,
			want:    ports.Invocation{StatusCode: 200, Payload: json.RawMessage(`{"ok":true}`), LogTail: "START\nEND\n"},
			calls:   1, wantType: "RequestResponse",
		},
		{
			name: "function error",
			fn: fakeaws.Function{Name: "f", Result: fakeaws.InvokeResult{
				Payload: []byte(`{"errorMessage":"boom","errorType":"Error"}`), FunctionError: "Unhandled", LogTail: "ERROR boom",
			}},
			want: ports.Invocation{
				StatusCode: 200, Payload: json.RawMessage(`{"errorMessage":"boom","errorType":"Error"}`),
				FunctionError: "Unhandled", LogTail: "ERROR boom",
			},
			calls: 1, wantType: "RequestResponse",
		},
		{
			name: "answer that is not JSON",
			fn: fakeaws.Function{Name: "f", Handle: func(p []byte) fakeaws.InvokeResult {
				return fakeaws.InvokeResult{Payload: []byte("got " + string(p))}
			}},
			payload: `[1,2]`,
			want:    ports.Invocation{StatusCode: 200, Payload: json.RawMessage(`"got [1,2]"`)},
			calls:   1, wantType: "RequestResponse",
		},
		{
			name:    "dry run",
			fn:      fakeaws.Function{Name: "f", Result: fakeaws.InvokeResult{Payload: []byte(`{"ran":true}`)}},
			payload: `{}`, dryRun: true,
			want:  ports.Invocation{StatusCode: 204},
			calls: 1, wantType: "DryRun",
		},
		{name: "missing function", fn: fakeaws.Function{Name: "f"}, invoke: "ghost", kind: ports.KindNotFound, calls: 1},
		{name: "payload that is not JSON", fn: fakeaws.Function{Name: "f"}, payload: `{`, kind: ports.KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.Account(userAccount).Function(tt.fn)
			name := tt.invoke
			if name == "" {
				name = tt.fn.Name
			}
			var payload json.RawMessage
			if tt.payload != "" {
				payload = json.RawMessage(tt.payload)
			}
			got, err := e.p.InvokeFunction(context.Background(), keyCreds(), name, payload, tt.dryRun)
			calls := e.fake.CallsTo(fakeaws.ServiceLambda, "Invoke")
			if len(calls) != tt.calls {
				t.Fatalf("Invoke calls = %d, want %d", len(calls), tt.calls)
			}
			if tt.kind != "" {
				pe := wantKind(t, err, tt.kind)
				if tt.kind == ports.KindNotFound && pe.Message != "function ghost not found" {
					t.Errorf("message = %q", pe.Message)
				}
				return
			}
			if err != nil {
				t.Fatalf("InvokeFunction: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("InvokeFunction =\n%+v\nwant\n%+v", got, tt.want)
			}
			in := calls[0].Input
			if in["InvocationType"] != tt.wantType || in["LogType"] != "Tail" || in["Payload"] != tt.payload || in["FunctionName"] != name {
				t.Errorf("Invoke input = %v", in)
			}
		})
	}
}

func TestFunctionLogs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fn    string
		group string
		want  []string
		kind  ports.Kind
	}{
		{name: "default log group", fn: "fn-a", group: "/aws/lambda/fn-a", want: []string{"a-1", "a-2"}},
		{name: "configured log group", fn: "fn-b", group: "/custom/fn-b", want: []string{"b-1"}},
		{name: "missing function", fn: "ghost", kind: ports.KindNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedFunctions(e.fake)
			at := fixture.Epoch.Add(-time.Minute)
			e.fake.Account(userAccount).
				LogEvents("/aws/lambda/fn-a", "2026/01/02/[$LATEST]abc",
					fakeaws.LogEvent{Timestamp: at, Message: "a-1"}, fakeaws.LogEvent{Timestamp: at.Add(time.Second), Message: "a-2"}).
				LogEvents("/custom/fn-b", "2026/01/02/[$LATEST]def", fakeaws.LogEvent{Timestamp: at, Message: "b-1"})
			events, err := e.p.FunctionLogs(context.Background(), keyCreds(), tt.fn, ports.LogQuery{Limit: 10})
			if tt.kind != "" {
				if pe := wantKind(t, err, tt.kind); pe.Message != "function ghost not found" {
					t.Errorf("message = %q", pe.Message)
				}
				return
			}
			if err != nil {
				t.Fatalf("FunctionLogs: %v", err)
			}
			if got := messages(events); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("messages = %v, want %v", got, tt.want)
			}
			calls := e.fake.CallsTo(fakeaws.ServiceLogs, "FilterLogEvents")
			if len(calls) != 1 || calls[0].Input["logGroupName"] != tt.group || calls[0].Input["logStreamNamePrefix"] != nil {
				t.Errorf("FilterLogEvents calls = %+v, want one on %s", calls, tt.group)
			}
		})
	}
}
