package kindnode

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// imageRef matches an image reference in a manifest: an image: field, or
// the provisioner's --helper-image argument on the line after it.
var imageRef = regexp.MustCompile(`(?m)(?:image:\s*|--helper-image\n\s*-\s*)(\S+)`)

// The manifests written into a node name only images the node holds: kind's
// own names are all replaced by the images built here in their place.
func TestNodeManifestsNameOnlyImagesTheNodeHolds(t *testing.T) {
	module, err := controlplane.DownloadModule(t.Context(), "sigs.k8s.io/kind@"+controlplane.KindVersion)
	if err != nil {
		t.Skipf("the kind module cannot be had here: %v", err)
	}
	kind, err := readKindSource(module.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if kind.cniManifestPath != "/kind/manifests/default-cni.yaml" || kind.storageManifestPath != "/kind/manifests/default-storage.yaml" {
		t.Errorf("kind reads its manifests from %s and %s", kind.cniManifestPath, kind.storageManifestPath)
	}
	built := []string{kindnetImage, provisionerRef, helperImage}
	root := t.TempDir()
	if err := writeKindFiles(root, kind); err != nil {
		t.Fatal(err)
	}
	cni, storage := readFile(t, root+kind.cniManifestPath), readFile(t, root+kind.storageManifestPath)
	if version := readFile(t, root+"/kind/version"); version != controlplane.KubernetesVersion {
		t.Errorf("/kind/version is %q, want %s", version, controlplane.KubernetesVersion)
	}
	for name, manifest := range map[string]string{"CNI": cni, "storage": storage} {
		refs := imageRef.FindAllStringSubmatch(manifest, -1)
		if len(refs) == 0 {
			t.Errorf("the %s manifest names no image:\n%s", name, manifest)
		}
		for _, ref := range refs {
			if !slices.Contains(built, ref[1]) {
				t.Errorf("the %s manifest names %s, which the node does not hold (it holds %v)", name, ref[1], built)
			}
		}
	}
	if !strings.Contains(storage, "--helper-image") || !strings.Contains(storage, helperImage) {
		t.Errorf("the storage manifest does not give the provisioner the helper image %s", helperImage)
	}
}

// Constants are read as kind writes them: literals, other constants and +.
func TestStringConstantsAreEvaluatedAsWritten(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nconst a = \"x\"\nconst b = a + `-y-` + (c)\nvar c = \"z\"\nconst n = 3\nconst loop = loop + \"\"\n"
	if err := writeFile(dir+"/p.go", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := stringConstants(dir, "p.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ want, err string }{
		"a literal":                    {want: "x"},
		"a sum of constants":           {want: "x-y-z"},
		"a number is no string":        {err: "not a string"},
		"a constant that is not there": {err: "no constant"},
		"a constant defined by itself": {err: "too deeply"},
	} {
		t.Run(name, func(t *testing.T) {
			id := map[string]string{"a literal": "a", "a sum of constants": "b", "a number is no string": "n",
				"a constant that is not there": "missing", "a constant defined by itself": "loop"}[name]
			got, err := c.eval(id)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("eval(%s) = %q, %v; want an error with %q", id, got, err, tc.err)
			case tc.err == "" && (err != nil || got != tc.want):
				t.Errorf("eval(%s) = %q, %v; want %q", id, got, err, tc.want)
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
