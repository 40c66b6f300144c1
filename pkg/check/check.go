package check

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metawatch/metawatch/pkg/acceptance"
	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/reports"
)

// options are metawatch check's flags.
type options struct {
	file, kubeconfig, as string
	// live: the check against the cluster is required (a kubeconfig must be given).
	live bool
	// rbac also reports what the identity holds beyond the configuration's needs.
	rbac bool
	// chartValues is where to write the chart's rbac.kinds for the configuration.
	chartValues string
	// limits are the guardrails metawatch runs with: check rejects what it would.
	limits config.Guardrails
	// removalBrake is the brake metawatch runs with: --report says what it would hold.
	removalBrake brake.Bound
	// objects are files of objects to preview the rules on (--objects).
	objects stringList
	// output is the format of --objects' and --report's reports: text or json.
	output string
	// report lists the cluster's objects not as the rules want (--live).
	report bool
	// fieldManager is the --field-manager metawatch runs with: the keys it
	// owns, and the name its dry runs apply as (never empty: usageError);
	// identity is made of it once the flags are valid.
	fieldManager string
	identity     *authority.Identity
	// openReports is the --open-reports metawatch runs with: --rbac counts
	// what it writes as needed.
	openReports bool
	// reportResults is the --open-reports-max-results metawatch runs with:
	// -o openreports lists as many results per report.
	reportResults int
}

// stringList is a flag that may be given several times.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// Run is `metawatch check -f FILE [--kubeconfig PATH]` with args (those
// after "check"), writing to stdout and stderr: it validates a
// configuration (a bare config.yaml or a ConfigMap manifest) offline and,
// with a kubeconfig, against the cluster: kinds resolve, field selectors are
// accepted, and the identity may list and watch every watched kind and patch
// every kind a rule writes (with --rbac, and nothing more). It prints every
// problem and returns the exit code: 0 or 1, like `promtool check config`, 2
// for a usage error, 3 to 5 for --objects and --report (see exitCode).
// --objects - reads os.Stdin.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{limits: config.DefaultGuardrails()}
	fs.StringVar(&o.file, "f", "", "The configuration file: a config.yaml or a selectors ConfigMap manifest.")
	fs.StringVar(&o.file, "config-file", "", "The same as -f, as metawatch itself calls it.")
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "Also check against this cluster (kinds, selectors, RBAC).")
	fs.BoolVar(&o.live, "live", false, "Require the check against the cluster of --kubeconfig (or KUBECONFIG): fail, not skip it, without one. "+
		"Against a cluster, check also has the API server dry-run the admission policies of rules with atCreation (validating them and compiling their CEL).")
	fs.StringVar(&o.as, "as", "", "Check RBAC as this user, e.g. system:serviceaccount:metawatch-system:metawatch (impersonation).")
	fs.BoolVar(&o.rbac, "rbac", false, "Also fail when the identity holds more than the configuration needs: any verb on any resource beyond list and watch of the watched kinds, "+
		"patch of the kinds rules write, and metawatch's own Events, Leases and selectors ConfigMap (in the --as ServiceAccount's namespace, else default). Needs --kubeconfig.")
	fs.StringVar(&o.chartValues, "chart-values", "", "Write to this file the chart values (rbac.kinds) whose RBAC is exactly what the configuration needs. Needs --kubeconfig.")
	fs.Var(&o.objects, "objects", "Show what the rules would do to the objects in this file (YAML or JSON, several documents, a List as kubectl get -o yaml writes; - for stdin), "+
		"and exit 0 if nothing would change, 3 if metawatch would write, 4 if an object fails a requirement or holds a key another field manager owns, 5 for both. "+
		"May be repeated; further files may follow the flags. Namespaces and owners come from the same files or, with --live, from the cluster (read-only).")
	fs.BoolVar(&o.report, "report", false, "With --live: list the objects of the watched kinds that are not as the rules want (missing, wrong, conflicting keys, violations), "+
		"grouped by rule and namespace, read-only and metadata only (paginated lists); exit codes as for --objects.")
	fs.StringVar(&o.output, "o", "text", "The format of --objects' and --report's reports: text, json, or openreports: a List of the OpenReports Reports and ClusterReport "+
		"(openreports.io/v1alpha1) metawatch would keep with --open-reports, with a warn result for each write it would make, per object, rule and action, for review in CI.")
	o.limits.BindFlags(fs)
	o.removalBrake = brake.DefaultBound()
	o.removalBrake.BindFlags(fs)
	fs.StringVar(&o.fieldManager, "field-manager", authority.DefaultFieldManager, "The --field-manager metawatch runs with: the keys it would release or adopt are those this name owns.")
	fs.BoolVar(&o.openReports, "open-reports", false, "The --open-reports metawatch runs with: --rbac counts list, create, patch and delete on reports and clusterreports (openreports.io) as needed.")
	fs.IntVar(&o.reportResults, "open-reports-max-results", reports.DefaultMaxResults, fmt.Sprintf("The --open-reports-max-results metawatch runs with: -o openreports lists as many results per report (1 to %d).", reports.MaxResultsLimit))
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: metawatch check -f FILE [--kubeconfig PATH [--live] [--as USER] [--rbac] [--chart-values FILE]] [the guardrail flags metawatch runs with]")
		fmt.Fprintln(fs.Output(), "       metawatch check -f FILE --objects OBJECTS [OBJECTS...] [-o text|json|openreports] [--live [--kubeconfig PATH]] [the guardrail flags]")
		fmt.Fprintln(fs.Output(), "       metawatch check -f FILE --live --report [--kubeconfig PATH] [-o text|json|openreports] [the guardrail flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(o.objects) > 0 {
		o.objects = append(o.objects, fs.Args()...)
	}
	if why := o.usageError(fs.Args()); why != "" {
		fmt.Fprintf(stderr, "metawatch check: %s\n", why)
		fs.Usage()
		return 2
	}
	o.identity = authority.NewIdentity(o.fieldManager, "")
	if o.report {
		code, err := checkReport(ctx, stdout, o)
		if err != nil {
			fmt.Fprintf(stderr, "FAILED: %s\n", config.Describe(err))
		}
		return code
	}
	if len(o.objects) > 0 {
		code, err := checkObjects(ctx, stdout, o)
		if err != nil {
			fmt.Fprintf(stderr, "FAILED: %s\n", config.Describe(err))
		}
		return code
	}
	if err := check(ctx, stdout, o); err != nil {
		fmt.Fprintf(stdout, "FAILED: %s\n", config.Describe(err))
		return 1
	}
	fmt.Fprintln(stdout, "SUCCESS: the configuration is valid")
	return 0
}

// usageError says what is wrong with the flags ("" if nothing); args are
// the arguments after them.
func (o options) usageError(args []string) string {
	switch {
	case o.file == "":
		return "-f FILE is required: the configuration to check"
	case (o.rbac || o.chartValues != "" || o.live) && o.kubeconfig == "":
		return "--live, --rbac and --chart-values need a cluster: --kubeconfig PATH (or KUBECONFIG)"
	case o.output != "text" && o.output != "json" && o.output != outputOpenReports:
		return fmt.Sprintf("-o %s: want text, json or openreports", o.output)
	case len(o.objects) == 0 && len(args) > 0:
		return fmt.Sprintf("unexpected arguments %v: files of objects follow --objects", args)
	case o.output == outputOpenReports && (o.reportResults < 1 || o.reportResults > reports.MaxResultsLimit):
		return fmt.Sprintf("--open-reports-max-results=%d: want 1 to %d, the range metawatch's flag of that name takes", o.reportResults, reports.MaxResultsLimit)
	case o.report && !o.live:
		return "--report reads the cluster: add --live"
	case o.report && len(o.objects) > 0:
		return "--report and --objects exclude each other: --report reads the cluster's objects"
	}
	if err := authority.ValidFieldManager("--field-manager", o.fieldManager); err != nil {
		return err.Error()
	}
	return ""
}

func check(ctx context.Context, out io.Writer, o options) error {
	conf, err := config.ParseFile(o.file)
	if err != nil {
		return err
	}
	if o.kubeconfig == "" {
		if err := acceptance.Offline(conf, &o.limits); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %d watches, %d rules: valid offline, within the guardrails\n", o.file, len(conf.Watches), len(conf.Rules))
		if names := atCreationRules(conf); len(names) > 0 {
			fmt.Fprintf(out, "atCreation: %d rules get an admission policy; --live checks them on the cluster: %s\n", len(names), strings.Join(names, ", "))
		}
		return nil
	}
	fmt.Fprintf(out, "%s: %d watches, %d rules: valid offline\n", o.file, len(conf.Watches), len(conf.Rules))
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return checkCluster(ctx, out, conf, o)
}

func checkCluster(ctx context.Context, out io.Writer, conf *config.Config, o options) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	if o.as != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: o.as}
	}
	// The steps the controller takes before it runs a configuration, all
	// of them; what each found is printed in their order.
	accepted, warnings, refused := acceptance.Accept(ctx, cfg, conf, &o.limits)
	for _, w := range warnings {
		fmt.Fprintln(out, "warning:", w)
	}
	if accepted.Passed < acceptance.Resolved {
		return refused
	}
	watches := accepted.Watches
	// What the configuration needs, before the guardrails judge it: the
	// values' write: true is how the operator lets rules write a kind.
	if o.chartValues != "" {
		if err := writeChartValues(o.chartValues, o.file, watches, writtenKinds(conf), len(atCreationRules(conf)) > 0); err != nil {
			return err
		}
		fmt.Fprintf(out, "chart values for this configuration's RBAC: %s\n", o.chartValues)
	}
	// The guardrails, with the kinds' scopes as the cluster serves them,
	// and the admission policies' sizes.
	if accepted.Passed < acceptance.Sized {
		return refused
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	denied, err := accessTable(ctx, out, cs, watches, writtenKinds(conf))
	if err != nil {
		return err
	}
	if refused != nil { // a watch the server refuses (a forbidden one is in the table)
		return refused
	}
	policyDenied, err := policyAccess(ctx, cs, conf)
	if err != nil {
		return err
	}
	denied = append(denied, policyDenied...)
	if len(policyDenied) == 0 { // else the dry run is refused too: the denial says why
		if err := checkPolicies(ctx, out, cfg, cs, o.fieldManager, accepted.AdmissionRules); err != nil {
			return err
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("the identity lacks permissions: %s", strings.Join(denied, "; "))
	}
	if err := recommendSizing(ctx, out, cfg, watches); err != nil {
		return err
	}
	if o.rbac {
		return reviewRBAC(ctx, out, cs, reviewNamespace(o.as), reportNeeds(policyNeeds(configNeeds(watches, writtenKinds(conf)), conf), o.openReports))
	}
	return nil
}

// writtenKinds are the kinds some rule writes (not only audits), by name.
func writtenKinds(conf *config.Config) writtenSet {
	kinds := writtenSet{}
	for _, r := range conf.Rules {
		if r.Writes() {
			for _, k := range r.KindNames() {
				kinds[k] = true
			}
		}
	}
	return kinds
}

// writtenSet are the names of the kinds rules write.
type writtenSet map[string]bool

// of reports whether rules write w's objects: its kind is named, and it is
// not a watch of the owner chains alone, which no rule names (an implicit
// apps Deployment beside a configured custom Deployment).
func (s writtenSet) of(w config.ResolvedWatch) bool { return s[w.GVK.Kind] && !w.OwnersOnly }

// accessTable prints, per watch, whether the identity may list, watch and
// (where a rule writes) patch, and returns what is denied.
func accessTable(ctx context.Context, out io.Writer, cs kubernetes.Interface, watches []config.ResolvedWatch, written writtenSet) ([]string, error) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tRESOURCE\tNAMESPACES\tLIST\tWATCH\tPATCH")
	var denied []string
	for _, w := range watches {
		cells := []string{w.GVK.Kind, w.Resource.GroupResource().String(), namespacesLabel(w)}
		for _, verb := range []string{"list", "watch", "patch"} {
			if verb == "patch" && !written.of(w) {
				cells = append(cells, "-")
				continue
			}
			ok, err := canInAll(ctx, cs, verb, w)
			if err != nil {
				return nil, err
			}
			cells = append(cells, yesNo(ok))
			if !ok {
				denied = append(denied, fmt.Sprintf("%s %s (%s)", verb, w.Resource.GroupResource(), w.Path))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return denied, tw.Flush()
}

func canInAll(ctx context.Context, cs kubernetes.Interface, verb string, w config.ResolvedWatch) (bool, error) {
	namespaces := w.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		ok, err := access.CanI(ctx, cs, verb, w.Resource, ns)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func namespacesLabel(w config.ResolvedWatch) string {
	switch {
	case !w.Namespaced:
		return "(cluster)"
	case len(w.Namespaces) == 0:
		return "all"
	}
	return strings.Join(w.Namespaces, ",")
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}
