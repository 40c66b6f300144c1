package informer_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/informer"
)

// listsSeen records what an informer tells its Lists.
type listsSeen struct {
	mu      sync.Mutex
	told    []string
	onBegin func()
}

func (l *listsSeen) Begin() {
	l.mu.Lock()
	l.told = append(l.told, "begin")
	l.mu.Unlock()
	if l.onBegin != nil {
		l.onBegin()
	}
}

func (l *listsSeen) End() { l.mu.Lock(); l.told = append(l.told, "end"); l.mu.Unlock() }

func (l *listsSeen) said() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.told)
}

// Lists hears of each list attempt that receives objects: a begin when its
// stream or first page comes, an end when it ends, whatever ends it. An
// attempt the API server refuses is not told: the GC is not paced for a
// list that brings nothing (a forbidden kind retried for hours).
func TestListsHearOfEachAttemptThatReceives(t *testing.T) {
	cases := map[string]struct {
		setUp func(api *fakeAPI)
		then  func(t *testing.T, api *fakeAPI, inf *informer.Informer)
		want  []string
	}{
		"the first sync is one list": {
			want: []string{"begin", "end"},
		},
		"a list cut short and tried again is two attempts": {
			setUp: func(api *fakeAPI) { api.cut[me] = 3 },
			want:  []string{"begin", "end", "begin", "end"},
		},
		"attempts the API server refuses are not told": {
			setUp: func(api *fakeAPI) {
				down := apierrors.NewServiceUnavailable("starting")
				api.fail[me] = []error{down, down, down}
			},
			want: []string{"begin", "end"},
		},
		"a relist after a 410 is another": {
			then: func(t *testing.T, api *fakeAPI, inf *informer.Informer) {
				api.endWatches(true)
				settle(t, api, inf)
			},
			want: []string{"begin", "end", "begin", "end"},
		},
		"a watch resumed from its resourceVersion is no list": {
			then: func(t *testing.T, api *fakeAPI, inf *informer.Informer) {
				api.endWatches(false)
				settle(t, api, inf)
			},
			want: []string{"begin", "end"},
		},
		"a handler added after the list is handed the store as a list": {
			then: func(t *testing.T, api *fakeAPI, inf *informer.Informer) {
				if _, err := inf.AddEventHandler(newRecorder()); err != nil {
					t.Fatal(err)
				}
				settle(t, api, inf)
			},
			want: []string{"begin", "end", "begin", "end"},
		},
		"a paged list is one however many pages": {
			setUp: func(api *fakeAPI) { api.noWatchList = true },
			want:  []string{"begin", "end"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api, seen := newFakeAPI(), &listsSeen{}
				pods(api, 5)
				if tc.setUp != nil {
					tc.setUp(api)
				}
				inf, stop := run(t, api, informer.Options{Lists: seen, PageSize: 2}, newRecorder())
				settle(t, api, inf)
				if tc.then != nil {
					tc.then(t, api, inf)
				}
				stop()
				if got := seen.said(); !slices.Equal(got, tc.want) {
					t.Errorf("Lists was told %q, want %q", got, tc.want)
				}
			})
		})
	}
}

// An informer stopped while its list streams ends that list for Lists.
func TestAListStoppedMidwayIsEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		pods(api, 5)
		ctx, cancel := context.WithCancel(t.Context())
		seen := &listsSeen{onBegin: cancel} // stopped as its list begins
		inf := informer.New(api.client(me), &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{}, informer.Options{Lists: seen})
		inf.RunWithContext(ctx)
		if inf.HasSynced() {
			t.Error("the informer synced, though stopped as its list began")
		}
		if got, want := seen.said(), []string{"begin", "end"}; !slices.Equal(got, want) {
			t.Errorf("Lists was told %q, want %q", got, want)
		}
	})
}
