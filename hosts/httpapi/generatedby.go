package httpapi

import "github.com/devpilot/devpilot/ports"

// modelMade is the generated_by of work a model wrote: the model's id,
// with sandbox true when it is the sandbox's scripted demo model.
func modelMade(model string) generatedByJSON {
	sandbox := ports.IsSandboxModel(model)
	return generatedByJSON{Kind: "model", Model: model, Sandbox: &sandbox}
}

// userMade is the generated_by of work a person wrote by hand: their id
// and, when known, their name.
func userMade(id, name string) generatedByJSON {
	return generatedByJSON{Kind: "user", UserID: id, UserName: name}
}

// contentGeneratedBy says who made a content item's text: the person who
// last edited its title or body, else the model that wrote it; nil for
// an item no one has written yet (being generated, or failed).
func contentGeneratedBy(it ports.ContentItem) *generatedByJSON {
	switch {
	case it.EditedBy != "":
		g := userMade(it.EditedBy, it.EditedByName)
		return &g
	case it.Model != "":
		g := modelMade(it.Model)
		return &g
	}
	return nil
}
