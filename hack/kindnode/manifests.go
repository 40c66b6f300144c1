package kindnode

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
)

// kindSource is what a node image takes from kind's own source at
// controlplane.KindVersion: the manifests kind installs on a new cluster and
// the images they name. kind keeps them as Go constants of its node-image
// builder, so they are read from there, not copied here to drift.
type kindSource struct {
	cniManifest, storageManifest                 string
	cniManifestPath, storageManifestPath         string
	kindnetdImage, provisionerImage, helperImage string
}

// readKindSource evaluates the constants of kind's node-image builder in
// kindDir (the kind module's directory).
func readKindSource(kindDir string) (kindSource, error) {
	dir := filepath.Join(kindDir, "pkg", "build", "nodeimage")
	consts, err := stringConstants(dir, "const.go", "const_cni.go", "const_storage.go")
	if err != nil {
		return kindSource{}, err
	}
	var s kindSource
	for name, into := range map[string]*string{
		"defaultCNIManifest": &s.cniManifest, "defaultStorageManifest": &s.storageManifest,
		"defaultCNIManifestLocation": &s.cniManifestPath, "defaultStorageManifestLocation": &s.storageManifestPath,
		"kindnetdImage": &s.kindnetdImage, "storageProvisionerImage": &s.provisionerImage, "storageHelperImage": &s.helperImage,
	} {
		v, err := consts.eval(name)
		if err != nil {
			return kindSource{}, fmt.Errorf("kind %s's node-image builder (%s): %w; the recipe in hack/kindnode needs updating", kindVersion(), dir, err)
		}
		*into = v
	}
	return s, nil
}

// constants are the string constants and variables of some Go files, as
// written: literals, other constants, and + between them.
type constants map[string]ast.Expr

func stringConstants(dir string, files ...string) (constants, error) {
	fset, c := token.NewFileSet(), constants{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || (gen.Tok != token.CONST && gen.Tok != token.VAR) {
				continue
			}
			for _, spec := range gen.Specs {
				v := spec.(*ast.ValueSpec)
				for i, id := range v.Names {
					if i < len(v.Values) {
						c[id.Name] = v.Values[i]
					}
				}
			}
		}
	}
	return c, nil
}

func (c constants) eval(name string) (string, error) {
	e, ok := c[name]
	if !ok {
		return "", fmt.Errorf("no constant %s", name)
	}
	return c.value(e, 0)
}

func (c constants) value(e ast.Expr, depth int) (string, error) {
	if depth > 32 {
		return "", fmt.Errorf("constants refer to each other too deeply")
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", fmt.Errorf("%s is not a string", e.Value)
		}
		return strconv.Unquote(e.Value)
	case *ast.Ident:
		inner, ok := c[e.Name]
		if !ok {
			return "", fmt.Errorf("no constant %s", e.Name)
		}
		return c.value(inner, depth+1)
	case *ast.ParenExpr:
		return c.value(e.X, depth+1)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", fmt.Errorf("%s between strings", e.Op)
		}
		x, err := c.value(e.X, depth+1)
		if err != nil {
			return "", err
		}
		y, err := c.value(e.Y, depth+1)
		return x + y, err
	}
	return "", fmt.Errorf("an expression of %T is not a string constant", e)
}
