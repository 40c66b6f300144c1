package capabilities

import "testing"

// Every capability the kernel has is either held or lacking, never both.
func TestHeldAndLackingSplitEveryCapability(t *testing.T) {
	held, err := Bounding()
	if err != nil {
		t.Fatal(err)
	}
	lacking := Lacking()
	for _, name := range lacking {
		if held[name] {
			t.Errorf("%s is both held and lacking", name)
		}
	}
	if len(held)+len(lacking) != len(names) {
		t.Errorf("%d held and %d lacking of %d capabilities (lacking %v)", len(held), len(lacking), len(names), lacking)
	}
	t.Logf("lacking here: %v", lacking)
}
