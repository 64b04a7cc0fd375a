package content_test

import (
	"context"
	"fmt"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

// exampleReporter lets an Example own a gomock.Controller: an unexpected or
// missing call is printed, so the Example's output no longer matches.
type exampleReporter struct{}

func (exampleReporter) Errorf(format string, args ...any) { fmt.Printf("mock: "+format+"\n", args...) }
func (exampleReporter) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// A core service is driven with the generated mocks of its ports
// (testkit/mocks): the store's EXPECT calls say what the service may read
// and must write. Here a project's brand settings, stored at version 2, are
// replaced as version 3; a second replacement made from version 2 is then
// refused as stale.
func ExampleService_PutBrand() {
	ctrl := gomock.NewController(exampleReporter{})
	defer ctrl.Finish() // reports an expected call that did not happen

	store := mocks.NewMockContentStore(ctrl)
	svc := content.New(content.Config{}, content.Deps{
		Store: store,
		Tx:    mocks.NewMockTransactor(ctrl), // not used by PutBrand
		Jobs:  mocks.NewMockJobQueue(ctrl),   // nor Jobs, nor LLM
		LLM:   mocks.NewMockLLM(ctrl),
		Clock: fixture.NewClock(),
		IDs:   &fixture.IDs{},
	})
	ctx := ports.WithPrincipal(context.Background(),
		ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember})

	stored := content.DefaultBrand("org-1", "web-site")
	stored.Version = 2
	// The project has its record already.
	store.EXPECT().EnsureContentProject(gomock.Any(), gomock.Any()).Return(false, nil).AnyTimes()
	gomock.InOrder(
		store.EXPECT().GetBrand(gomock.Any(), "org-1", "web-site").Return(stored, nil),
		store.EXPECT().PutBrand(gomock.Any(), gomock.Any()).DoAndReturn(
			func(_ context.Context, b ports.Brand) error {
				fmt.Printf("store: version %d of %s, by %s\n", b.Version, b.ProjectID, b.UpdatedBy)
				stored = b
				return nil
			}),
		// The second call reads version 3 back and writes nothing.
		store.EXPECT().GetBrand(gomock.Any(), "org-1", "web-site").DoAndReturn(
			func(context.Context, string, string) (ports.Brand, error) { return stored, nil }),
	)

	from := 2
	in := content.BrandInput{
		Name:           "Acme",
		Tone:           []string{"warm", "precise"},
		BannedWords:    []string{"synergy", "Synergy"},
		PreferredTerms: map[string]string{"customers": "clients"},
		IfVersion:      &from,
	}
	b, err := svc.PutBrand(ctx, "web-site", in)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("brand %q version %d, tone %v, banned %v, at %s\n",
		b.Name, b.Version, b.Tone, b.BannedWords, b.UpdatedAt.Format("2006-01-02"))

	_, err = svc.PutBrand(ctx, "web-site", in)
	if e, ok := ports.AsError(err); ok {
		fmt.Printf("again from version 2: %s (%s)\n", e.Kind, e.ErrorCode())
	}
	// Output:
	// store: version 3 of web-site, by user-alice
	// brand "Acme" version 3, tone [warm precise], banned [synergy], at 2026-01-02
	// again from version 2: precondition_failed (stale_version)
}

// CreateBrief validates and normalises the brief, gives it an id and a time
// from the IDs and Clock ports, and stores it; invalid input never reaches
// the store.
func ExampleService_CreateBrief() {
	ctrl := gomock.NewController(exampleReporter{})
	defer ctrl.Finish()

	store := mocks.NewMockContentStore(ctrl)
	svc := content.New(content.Config{}, content.Deps{
		Store: store,
		Tx:    mocks.NewMockTransactor(ctrl),
		Jobs:  mocks.NewMockJobQueue(ctrl),
		LLM:   mocks.NewMockLLM(ctrl),
		Clock: fixture.NewClock(),
		IDs:   &fixture.IDs{},
	})
	ctx := ports.WithPrincipal(context.Background(),
		ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember})

	store.EXPECT().EnsureContentProject(gomock.Any(), gomock.Any()).Return(false, nil).Times(1)
	store.EXPECT().CreateBrief(gomock.Any(), gomock.Any()).Times(1).DoAndReturn(
		func(_ context.Context, b ports.Brief) error {
			fmt.Printf("store: brief %s of %s/%s\n", b.ID, b.OrgID, b.ProjectID)
			return nil
		})

	b, err := svc.CreateBrief(ctx, content.BriefInput{
		ProjectID: "web-site",
		Title:     "  Launch post  ",
		Goal:      "Announce the new pricing",
		Keywords:  []string{"pricing", "", "Pricing", "plans"},
		MinWords:  300,
		MaxWords:  600,
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("%q: format %s, keywords %v, created by %s\n", b.Title, b.Format, b.Keywords, b.CreatedBy)

	_, err = svc.CreateBrief(ctx, content.BriefInput{ProjectID: "web-site", MinWords: 600, MaxWords: 300})
	if e, ok := ports.AsError(err); ok {
		fmt.Println(e.Kind, e.Fields)
	}
	// Output:
	// store: brief 00000000-0000-7000-8000-000000000001 of org-1/web-site
	// "Launch post": format article, keywords [pricing plans], created by user-alice
	// invalid [{title required} {length.max_words must be at least min_words (600)}]
}
