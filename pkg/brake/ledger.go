package brake

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Store keeps the Record of one installation. Save is a compare-and-swap:
// it fails with ErrConflict unless version is the stored record's version
// ("" when there is none yet), so replicas that count at once never lose
// each other's counts.
type Store interface {
	// Load returns the stored record and its version ("", and a zero
	// record, if none is stored yet).
	Load(ctx context.Context) (Record, string, error)
	// Save stores r if the stored version is version, and returns the new one.
	Save(ctx context.Context, r Record, version string) (string, error)
	// String names where the record is kept, for messages.
	String() string
}

// ErrConflict is Save's error when the stored record changed since it was loaded.
var ErrConflict = errors.New("the removal brake's record changed since it was read")

// maxSaveAttempts bounds the compare-and-swap retries of one update: each
// conflict means another replica counted meanwhile, and loads its count.
const maxSaveAttempts = 8

// staleAfter is how old the cached record may be when it is read without a
// write: a replica that holds reads the newest at most this late (another
// replica's reset or approval).
const staleAfter = 5 * time.Second

// Ledger is the process's access to its installation's Record: every
// generation's Brake counts through it, so that a new generation of the same
// configuration, a restart, a failover or another replica (sharded) goes on
// from the same count. It caches the record between updates.
type Ledger struct {
	store Store
	now   func() time.Time
	// started is when this process began to watch: it may end a held change
	// that nobody refreshes only a Window later (see window.watched).
	started time.Time
	// firstChange is the number a record never stored begins its changes
	// after: a random one, so that an approval left on the ConfigMap from
	// before the record was deleted names no change of the new record.
	firstChange func() int

	mu      sync.Mutex
	rec     Record
	version string
	loaded  time.Time // when rec was last read or written; zero: never
	err     error     // the last failure to read or write the record
}

// NewLedger is the ledger of the record store keeps; now nil: time.Now.
func NewLedger(store Store, now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{store: store, now: now, started: now(), firstChange: randomFirstChange}
}

// randomFirstChange is a number from 1,000 to 999,999.
func randomFirstChange() int { return 1000 + rand.IntN(999_000) }

// Where names where the record is kept.
func (l *Ledger) Where() string { return l.store.String() }

// Err is the last failure to read or write the record, nil once one succeeded since.
func (l *Ledger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// window is the clock of an operation at now.
func (l *Ledger) window(length time.Duration) window {
	now := l.now()
	return window{now: now, length: length, watched: now.Sub(l.started) >= length}
}

// update applies f to the newest record (read again when the cached one is
// older than staleAfter: another replica may have counted, approved or
// begun the count again) and saves the result when f says it changed it,
// trying again from the stored record when another replica saved meanwhile.
func (l *Ledger) update(ctx context.Context, f func(*Record) bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range maxSaveAttempts {
		if l.loaded.IsZero() || l.now().Sub(l.loaded) > staleAfter {
			if err := l.loadLocked(ctx); err != nil {
				return err
			}
		}
		next := l.rec.clone()
		if !f(&next) {
			return nil
		}
		version, err := l.store.Save(ctx, next, l.version)
		switch {
		case errors.Is(err, ErrConflict):
			l.loaded = time.Time{} // read the other replica's count, and count again
			continue
		case err != nil:
			l.err = fmt.Errorf("writing the removal brake's record (%s): %w", l.store, err)
			return l.err
		}
		l.rec, l.version, l.loaded, l.err = next, version, l.now(), nil
		return nil
	}
	l.err = fmt.Errorf("writing the removal brake's record (%s): it changed %d times while being written", l.store, maxSaveAttempts)
	return l.err
}

// read is the record, read again from the store if the cached one is older than staleAfter.
func (l *Ledger) read(ctx context.Context) (Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded.IsZero() || l.now().Sub(l.loaded) > staleAfter {
		if err := l.loadLocked(ctx); err != nil {
			return Record{}, err
		}
	}
	return l.rec.clone(), nil
}

func (l *Ledger) loadLocked(ctx context.Context) error {
	rec, version, err := l.store.Load(ctx)
	if err != nil {
		l.err = fmt.Errorf("reading the removal brake's record (%s): %w", l.store, err)
		return l.err
	}
	if version == "" && rec.Change == 0 {
		rec.Change = l.firstChange()
	}
	l.rec, l.version, l.loaded, l.err = rec, version, l.now(), nil
	return nil
}

// MemoryStore keeps the record in this process only: a restart forgets it.
// For --dry-run, which writes nothing, and where no place to keep it is known.
type MemoryStore struct {
	mu      sync.Mutex
	rec     Record
	version int
}

// Load returns the record kept in memory.
func (m *MemoryStore) Load(context.Context) (Record, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version == 0 {
		return Record{}, "", nil
	}
	return m.rec.clone(), fmt.Sprint(m.version), nil
}

// Save keeps r if version is the one kept.
func (m *MemoryStore) Save(_ context.Context, r Record, version string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if current := map[bool]string{true: "", false: fmt.Sprint(m.version)}[m.version == 0]; version != current {
		return "", ErrConflict
	}
	m.rec, m.version = r.clone(), m.version+1
	return fmt.Sprint(m.version), nil
}

// String says the record is not kept across restarts.
func (m *MemoryStore) String() string { return "this process's memory only" }
