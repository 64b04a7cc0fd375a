package fakeaws

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

const stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"

type responseMetadata struct {
	RequestID string `xml:"RequestId"`
}

type getCallerIdentityResponse struct {
	XMLName xml.Name `xml:"GetCallerIdentityResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Result  struct {
		Arn     string
		UserID  string `xml:"UserId"`
		Account string
	} `xml:"GetCallerIdentityResult"`
	ResponseMetadata responseMetadata
}

type assumeRoleResponse struct {
	XMLName xml.Name `xml:"AssumeRoleResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Result  struct {
		AssumedRoleUser struct {
			AssumedRoleID string `xml:"AssumedRoleId"`
			Arn           string
		}
		Credentials struct {
			AccessKeyID     string `xml:"AccessKeyId"`
			SecretAccessKey string
			SessionToken    string
			Expiration      string
		}
		PackedPolicySize int
	} `xml:"AssumeRoleResult"`
	ResponseMetadata responseMetadata
}

type queryErrorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string
		Code    string
		Message string
	}
	RequestID string `xml:"RequestId"`
}

func xmlDocument(v any) ([]byte, error) {
	b, err := xml.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}

func queryErrorBody(e *apiError) []byte {
	var r queryErrorResponse
	r.Xmlns = stsNamespace
	r.Error.Type = "Sender"
	if e.status >= 500 {
		r.Error.Type = "Receiver"
	}
	r.Error.Code, r.Error.Message, r.RequestID = e.code, e.message, requestID()
	b, err := xmlDocument(r)
	if err != nil {
		panic(fmt.Sprintf("fakeaws: encoding an error: %v", err))
	}
	return b
}

func stsGetCallerIdentity(rq *request) (*reply, *apiError) {
	var out getCallerIdentityResponse
	out.Xmlns = stsNamespace
	p := rq.principal
	out.Result.Arn, out.Result.UserID, out.Result.Account = p.arn, p.userID, p.account.id
	out.ResponseMetadata.RequestID = requestID()
	return &reply{body: out}, nil
}

var sessionNamePattern = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)

func stsAssumeRole(rq *request) (*reply, *apiError) {
	in := rq.input
	roleARN, session := str(in, "RoleArn"), str(in, "RoleSessionName")
	if !sessionNamePattern.MatchString(session) {
		return nil, errf(http.StatusBadRequest, "ValidationError",
			"1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint", session)
	}
	duration := time.Hour
	if v := str(in, "DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 900 || n > 43200 {
			return nil, errf(http.StatusBadRequest, "ValidationError", "DurationSeconds %q is out of range", v)
		}
		duration = time.Duration(n) * time.Second
	}
	s := rq.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.roles[roleARN]
	if r == nil || r.externalID != str(in, "ExternalId") {
		return nil, errf(http.StatusForbidden, "AccessDenied",
			"User: %s is not authorized to perform: sts:AssumeRole on resource: %s", rq.principal.arn, roleARN)
	}
	s.seq++
	p := &principal{
		account:      r.account,
		arn:          fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", r.account.id, r.name, session),
		userID:       r.id + ":" + session,
		secret:       fmt.Sprintf("fakeTemporarySecret%021d", s.seq),
		sessionToken: fmt.Sprintf("FakeSessionToken%024d", s.seq),
	}
	keyID := fmt.Sprintf("ASIAFAKE%012d", s.seq)
	s.keys[keyID] = p

	var out assumeRoleResponse
	out.Xmlns = stsNamespace
	out.Result.AssumedRoleUser.AssumedRoleID, out.Result.AssumedRoleUser.Arn = p.userID, p.arn
	c := &out.Result.Credentials
	c.AccessKeyID, c.SecretAccessKey, c.SessionToken = keyID, p.secret, p.sessionToken
	c.Expiration = time.Now().Add(duration).UTC().Format(time.RFC3339)
	out.ResponseMetadata.RequestID = requestID()
	return &reply{body: out}, nil
}
