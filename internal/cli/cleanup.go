package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/provider/labprovider"
	"github.com/brakebench/brakebench/internal/teardown"
	"github.com/brakebench/brakebench/internal/undo"
)

// cleanupItem is one line of the cleanup report.
type cleanupItem struct {
	what, status, detail string
}

func (a *app) cleanupCmd() *cobra.Command {
	var run string
	var all bool
	cmd := &cobra.Command{
		Use:   "cleanup (--run ID | --all) [--cluster ...] [--context C]",
		Short: "Remove everything brakebench labelled and restore everything a run changed (after a crash or SIGKILL)",
		Long: "Finds objects labelled app.kubernetes.io/managed-by=brakebench with a run id (only those), deletes them by\n" +
			"exact name, replays the runs' journals to restore changed objects (nodes, the controller's flags), and\n" +
			"reports each item as done / already gone / failed. Exit 4 when anything could not be confirmed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (run == "") == !all {
				return badInput(errors.New("give exactly one of --run ID and --all"))
			}
			// The run id is a label value of the objects to delete and a journal's file name.
			if errs := validation.IsValidLabelValue(run); run != "" && len(errs) > 0 {
				return badInput(fmt.Errorf("--run %s: expected a run id like 3f9a1c2e (a label value): %s", config.QuoteShort(run), strings.Join(errs, "; ")))
			}
			return a.cleanup(cmd.Context(), run)
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "clean up one run")
	cmd.Flags().BoolVar(&all, "all", false, "clean up every run")
	return cmd
}

var cleanupResources = []struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	{schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"}, false},
	{schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "prioritylevelconfigurations"}, false},
	{schema.GroupVersionResource{Version: "v1", Resource: "events"}, true},
	{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
}

// attach connects to the configured cluster without creating one.
func (a *app) attach(ctx context.Context, cfg *config.Resolved) (provider.Cluster, error) {
	if cfg.Cluster.Provider == "lab" {
		l, err := a.newLab(cfg)
		if err != nil {
			return nil, err
		}
		return labprovider.Attach(ctx, l)
	}
	return a.connect(ctx, cfg)
}

func (a *app) cleanup(ctx context.Context, run string) error {
	cfg, err := a.g.load("")
	if err != nil {
		return err
	}
	cluster, err := a.attach(ctx, cfg)
	if err != nil {
		return &ExitError{Code: ExitCleanup, Err: fmt.Errorf("cannot reach the cluster to clean up: %w", err)}
	}
	c, err := kube.NewClients(cluster.RESTConfig())
	if err != nil {
		return err
	}
	var items []cleanupItem
	failed := 0
	add := func(what, status, detail string) {
		items = append(items, cleanupItem{what, status, detail})
		if status == "failed" {
			failed++
		}
	}
	deleteOne := func(gvr schema.GroupVersionResource, ns, name string) {
		what := gvr.Resource + " " + strings.TrimPrefix(ns+"/"+name, "/")
		ri := c.Dynamic.Resource(gvr)
		var err error
		if ns != "" {
			err = ri.Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
		} else {
			err = ri.Delete(ctx, name, metav1.DeleteOptions{})
		}
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			add(what, "already gone", "")
		case err != nil:
			add(what, "failed", kube.ShortErr(err))
		case gvr.Resource == "namespaces":
			// Confirm: a namespace is gone only once its contents are.
			if werr := teardown.DeleteNamespace(ctx, c, name, 5*time.Minute); werr != nil {
				add(what, "failed", werr.Error())
			} else {
				add(what, "done", "deleted and confirmed gone")
			}
		default:
			// Confirm too (a finalizer whose controller is gone would otherwise keep it).
			if werr := teardown.DeleteAndWait(ctx, c, gvr, ns, name, time.Minute); werr != nil {
				add(what, "failed", werr.Error())
			} else {
				add(what, "done", "deleted and confirmed gone")
			}
		}
	}
	jdir, err := journalDir(cfg)
	if err != nil {
		return err
	}
	journals, err := undo.ReadJournals(jdir, run)
	switch {
	case errors.Is(err, undo.ErrNoJournal):
		add("journal of run "+run, "already gone", err.Error())
	case err != nil:
		add("journals in "+jdir, "failed", err.Error()) // unreadable: kept for a person to read
	}
	live := undo.IdentifyCluster(ctx, cluster.RESTConfig().Host, c.Typed)
	// ours: the journals about this cluster. A journal at this address that records no cluster
	// UID (an older brakebench) may be about a cluster that no longer exists, e.g. a deleted lab
	// whose port the new one reuses: replaying its paths and flags could break this one, so it
	// is left for a person.
	ours := journals[:0:0]
	for _, j := range journals {
		switch {
		case j.Cluster.Server != live.Server:
		case j.Unidentified() && live.UID != "":
			add("journal "+j.Path, "skipped", "records this address but no cluster UID (older brakebench): may be about an earlier cluster at this address; read it, restore by hand if it is this one, and delete it")
		case j.Cluster.Matches(live):
			ours = append(ours, j)
		default:
			add("journal "+j.Path, "skipped", fmt.Sprintf("about an earlier cluster at this address (kube-system UID %s; this one is %s): nothing in it can be restored here; delete it", j.Cluster.UID, live.UID))
		}
	}
	journals = ours
	env := undo.ReplayEnv{Clients: c, Cluster: cluster}
	// replay restores one pending change through the registry of replayers (each registered next
	// to the code that journals the change); false when it could not be confirmed.
	replay := func(j undo.RunJournal, e undo.Entry) bool {
		r, ok := undo.ReplayerFor(e)
		if !ok {
			add(fmt.Sprintf("restore %s %s %s (run %s)", e.Op, strings.ToLower(e.Kind), e.Name, j.Run), "failed", "no restorer for this change in this brakebench")
			return false
		}
		what := r.What(e, j.Run)
		if err := r.Replay(ctx, env, e); err != nil {
			add(what, "failed", err.Error())
			return false
		}
		add(what, "done", "")
		return true
	}
	// Early restorations first (Kueue: its webhooks, failurePolicy Fail, refuse every update of
	// pods and queues while the process behind them is gone, so nothing else could be cleaned up
	// while they stay). The rest after the labelled objects are gone (a running KEDA releases its
	// ScaledObjects' finalizers itself).
	early := map[string]bool{} // journal path + entry index -> restored
	for _, j := range journals {
		for i, e := range j.Pending() {
			if r, ok := undo.ReplayerFor(e); ok && r.Early {
				early[fmt.Sprintf("%s#%d", j.Path, i)] = replay(j, e)
			}
		}
	}
	sel := kube.RunSelector(run)
	for _, r := range cleanupResources {
		list, err := c.Dynamic.Resource(r.gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			add(r.gvr.Resource+" (list)", "failed", kube.ShortErr(err))
			continue
		}
		for _, o := range list.Items {
			deleteOne(r.gvr, o.GetNamespace(), o.GetName())
		}
	}
	// Journals: created objects by exact name, then every pending change restored.
	for _, j := range journals {
		ok := true
		for _, e := range j.Entries {
			if e.Op != undo.OpCreated {
				continue
			}
			gv, _ := schema.ParseGroupVersion(e.APIVersion)
			before := failed
			deleteOne(gv.WithResource(e.Resource), e.Namespace, e.Name)
			ok = ok && failed == before
		}
		for i, e := range j.Pending() {
			if done, wasEarly := early[fmt.Sprintf("%s#%d", j.Path, i)]; wasEarly {
				ok = ok && done // reported above
				continue
			}
			ok = replay(j, e) && ok
		}
		if ok {
			if err := j.Remove(); err != nil {
				add("journal "+j.Path, "failed", err.Error())
			}
		}
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	for _, it := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", it.status, it.what, it.detail)
	}
	_ = tw.Flush()
	if len(items) == 0 {
		fmt.Fprintln(a.stdout, "nothing to clean up")
	}
	if failed > 0 {
		return &ExitError{Code: ExitCleanup, Err: fmt.Errorf("%d item(s) could not be cleaned up", failed)}
	}
	return nil
}
