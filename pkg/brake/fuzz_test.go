package brake

import (
	"testing"
	"time"
)

// Whatever happens (objects to remove, restarts, time passing, approvals,
// forgotten objects), the objects let through since the count last began
// never exceed the bound plus what approvals added, and restarts add
// nothing: the record, not the process, holds the count.
func FuzzTheBrakeLetsThroughNoMoreThanTheBoundAndApprovals(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 3, 0, 0})
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 3, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const bound = 3
		limits := Bound{Objects: bound, Window: time.Minute}
		in := newInstallation()
		b := in.start(limits, hashA)
		through := 0        // objects let through since the count began
		approved := 0       // objects approvals added since
		next := 0           // the next new object
		var heldNow []int   // objects the running process holds
		var since time.Time // when the record's count began
		for _, op := range ops {
			throughBefore, approvedBefore := through, approved
			switch op % 5 {
			case 0: // a new object to remove
				if b.Admit(t.Context(), "Pod", key(next), nil, 0) {
					through++
				} else {
					heldNow = append(heldNow, next)
				}
				next++
			case 1: // a restart: the held objects are decided again by the new process
				b = in.start(limits, hashA)
				again := heldNow
				heldNow = nil
				for _, i := range again {
					if b.Admit(t.Context(), "Pod", key(i), nil, 0) {
						through++
					} else {
						heldNow = append(heldNow, i)
					}
				}
			case 2: // time passes
				in.clk.wait(time.Duration(op) * time.Second)
			case 3: // the operator approves what is held
				if token := b.HeldChange(); token != "" {
					v := b.Approve(t.Context(), token)
					approved += v.Released["Pod"]
					heldNow = nil
				}
			case 4: // an object no longer needs its removal
				if len(heldNow) > 0 {
					b.Forget("Pod", key(heldNow[0]))
					heldNow = heldNow[1:]
				}
			}
			rec, err := b.ledger.read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			k := rec.Kinds["Pod"]
			if k == nil {
				continue
			}
			if k.Removed > bound+k.Approved {
				t.Fatalf("the record counts %d let through, beyond the bound %d and %d approved", k.Removed, bound, k.Approved)
			}
			if !k.Since.Equal(since) { // the count began again, during this op
				since = k.Since
				through, approved = through-throughBefore, approved-approvedBefore
			}
			if through > bound+approved {
				t.Fatalf("%d objects let through since the count began, beyond the bound %d and %d approved (ops %v)", through, bound, approved, ops)
			}
		}
	})
}
