package httpapi

import (
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

// contentProjectJSON is a content project on the wire.
type contentProjectJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedBy   string    `json:"created_by"`
	Version     int       `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func contentProjectOut(p ports.ContentProject) contentProjectJSON {
	return contentProjectJSON{ID: p.ID, Name: p.Name, Description: p.Description, CreatedBy: p.CreatedBy,
		Version: p.Version, CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
}

type createProjectRequest struct {
	Name        *string `json:"name"`
	Description string  `json:"description"`
}

type updateProjectRequest struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	// Version, like If-Match, makes the change conditional.
	Version *int `json:"version"`
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	projects, next, err := s.d.Content.ListProjects(r.Context(), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(projects, contentProjectOut), next))
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) error {
	var req createProjectRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return missing("name")
	}
	p, err := s.d.Content.CreateProject(r.Context(), content.ProjectInput{Name: *req.Name, Description: req.Description})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/content/projects/"+p.ID)
	setETag(w, p.Version)
	return writeJSON(w, http.StatusCreated, contentProjectOut(p))
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) error {
	p, err := s.d.Content.Project(r.Context(), pathParam(r, "b"))
	if err != nil {
		return err
	}
	setETag(w, p.Version)
	return writeJSON(w, http.StatusOK, contentProjectOut(p))
}

func (s *Server) updateProject(w http.ResponseWriter, r *http.Request) error {
	var req updateProjectRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	version, err := expectedVersion(r, req.Version)
	if err != nil {
		return err
	}
	if req.Name == nil && req.Description == nil {
		return ports.Invalid("nothing to change: give name or description",
			ports.FieldError{Field: "name", Reason: "name or description required"})
	}
	p, err := s.d.Content.UpdateProject(r.Context(), pathParam(r, "b"),
		content.ProjectPatch{Name: req.Name, Description: req.Description, IfVersion: version})
	if err != nil {
		return err
	}
	setETag(w, p.Version)
	return writeJSON(w, http.StatusOK, contentProjectOut(p))
}
