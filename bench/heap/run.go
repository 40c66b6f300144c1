package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/metawatch/metawatch/bench/target"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/pkg/controlplane"
)

// run seeds the pods, measures every variant in its own process and prints a table.
func run(ctx context.Context, o options) error {
	cluster, err := target.Open(ctx, o.kind)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	o.kubeconfig = cluster.Kubeconfig
	if err := seedPods(ctx, o); err != nil {
		return err
	}
	var results []result
	for _, name := range strings.Split(o.variants, ",") {
		r, err := measureInChild(ctx, o, name)
		if err != nil {
			return fmt.Errorf("variant %s: %w", name, err)
		}
		results = append(results, r)
	}
	if o.json {
		return json.NewEncoder(os.Stdout).Encode(results)
	}
	printTable(o, results)
	return nil
}

func seedPods(ctx context.Context, o options) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "heap: creating %d realistic pods in namespace %s\n", o.pods, o.namespace)
	if err := seed.Namespace(ctx, c, o.namespace, nil); err != nil {
		return err
	}
	if err := seed.Pods(ctx, c, o.namespace, o.pods, o.concurrency, os.Stderr); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "heap: seeded in %s\n", time.Since(start).Round(time.Second))
	return nil
}

func measureInChild(ctx context.Context, o options, name string) (result, error) {
	self, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	cmd := exec.CommandContext(ctx, self, "--measure", name, "--namespace", o.namespace, "--kubeconfig", o.kubeconfig)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return result{}, err
	}
	var r result
	return r, json.Unmarshal(stdout.Bytes(), &r)
}

func printTable(o options, results []result) {
	fmt.Printf("\n%d realistic pods, %s, %s, kube-apiserver %s; ratios against %s, same run\n\n",
		o.pods, runtime.Version(), runtime.GOARCH, controlplane.KubernetesVersion, results[0].Variant)
	fmt.Printf("| variant | objects | retained heap / pod | allocated during sync / pod | received / pod | sync s | peak RSS | CPU s | %s retained / this |\n", results[0].Variant)
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		fmt.Printf("| %s | %d | %.0f B | %.0f B | %.0f B | %.1f | %d MiB | %.1f | %.1fx |\n", r.Variant, r.Objects, r.RetainedPerPod,
			r.AllocatedPerPod, r.ReceivedPerPod, r.SyncSeconds, r.PeakRSSBytes>>20, r.CPUSeconds, results[0].RetainedPerPod/r.RetainedPerPod)
	}
}
