package httpapi

import (
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

// targetJSON is a publishing target on the wire; Secret is set only in the
// answer to its creation.
type targetJSON struct {
	ID        string            `json:"id"`
	ProjectID string            `json:"project_id"`
	Name      string            `json:"name"`
	Kind      string            `json:"kind"`
	Config    map[string]string `json:"config"`
	HasSecret bool              `json:"has_secret"`
	Secret    string            `json:"secret,omitempty"`
	CreatedBy string            `json:"created_by"`
	CreatedAt time.Time         `json:"created_at"`
}

func targetOut(t ports.PublishTarget) targetJSON {
	cfg := t.Config
	if cfg == nil {
		cfg = map[string]string{}
	}
	return targetJSON{ID: t.ID, ProjectID: t.ProjectID, Name: t.Name, Kind: t.Kind, Config: cfg, HasSecret: t.SealedSecret != "",
		CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt.UTC()}
}

type createTargetRequest struct {
	ProjectID *string           `json:"project_id"`
	Name      *string           `json:"name"`
	Kind      *string           `json:"kind"`
	Config    map[string]string `json:"config"`
}

func (s *Server) createTarget(w http.ResponseWriter, r *http.Request) error {
	var req createTargetRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	var absent []string
	for _, f := range []struct {
		name string
		v    *string
	}{{"project_id", req.ProjectID}, {"name", req.Name}, {"kind", req.Kind}} {
		if f.v == nil {
			absent = append(absent, f.name)
		}
	}
	if len(absent) > 0 {
		return missing(absent...)
	}
	nt, err := s.d.Content.CreateTarget(r.Context(), content.TargetInput{ProjectID: *req.ProjectID, Name: *req.Name, Kind: *req.Kind, Config: req.Config})
	if err != nil {
		return err
	}
	out := targetOut(nt.Target)
	out.Secret = nt.Secret
	return writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listTargets(w http.ResponseWriter, r *http.Request) error {
	targets, err := s.d.Content.Targets(r.Context(), r.URL.Query().Get("project_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(targets, targetOut), ""))
}

func (s *Server) deleteTarget(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Content.DeleteTarget(r.Context(), pathParam(r, "b")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// publicationJSON is a publication on the wire.
type publicationJSON struct {
	ID         string                  `json:"id"`
	ContentID  string                  `json:"content_id"`
	TargetID   string                  `json:"target_id"`
	TargetName string                  `json:"target_name"`
	TargetKind string                  `json:"target_kind"`
	Status     ports.PublicationStatus `json:"status"`
	At         time.Time               `json:"at"`
	Attempts   []ports.PublishAttempt  `json:"attempts"`
	RemoteURL  string                  `json:"remote_url,omitempty"`
	Error      string                  `json:"error,omitempty"`
	CreatedBy  string                  `json:"created_by"`
	CreatedAt  time.Time               `json:"created_at"`
	UpdatedAt  time.Time               `json:"updated_at"`
	FinishedAt *time.Time              `json:"finished_at"`
}

func publicationOut(p ports.Publication) publicationJSON {
	attempts := make([]ports.PublishAttempt, len(p.Attempts))
	for i, a := range p.Attempts {
		a.At = a.At.UTC()
		attempts[i] = a
	}
	return publicationJSON{ID: p.ID, ContentID: p.ItemID, TargetID: p.TargetID, TargetName: p.TargetName, TargetKind: p.TargetKind,
		Status: p.Status, At: p.RunAt.UTC(), Attempts: attempts, RemoteURL: p.RemoteURL, Error: p.Error, CreatedBy: p.CreatedBy,
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC(), FinishedAt: utc(p.FinishedAt)}
}

type publishRequest struct {
	TargetID *string `json:"target_id"`
	At       *string `json:"at"`
	// Override publishes despite brand findings.
	Override *overrideRequest `json:"override"`
}

func (s *Server) publishContent(w http.ResponseWriter, r *http.Request) error {
	var req publishRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.TargetID == nil {
		return missing("target_id")
	}
	var at *time.Time
	if req.At != nil {
		t, err := ports.ParseClientTime("at", *req.At)
		if err != nil {
			return err
		}
		at = &t
	}
	pub, err := s.d.Content.Publish(r.Context(), pathParam(r, "a"), *req.TargetID, at, req.Override.reason())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, map[string]any{"publication_id": pub.ID, "status": pub.Status, "at": pub.RunAt.UTC(),
		"publication": publicationOut(pub)})
}

func (s *Server) listPublications(w http.ResponseWriter, r *http.Request) error {
	pubs, err := s.d.Content.Publications(r.Context(), pathParam(r, "a"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(pubs, publicationOut), ""))
}

func (s *Server) cancelPublication(w http.ResponseWriter, r *http.Request) error {
	pub, err := s.d.Content.CancelPublication(r.Context(), pathParam(r, "a"), pathParam(r, "c"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, publicationOut(pub))
}
