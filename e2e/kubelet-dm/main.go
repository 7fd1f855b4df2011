// kubelet-dm runs the kubelet's own device manager (k8s.io/kubernetes/pkg/kubelet/cm/devicemanager)
// for one node of the end-to-end cluster, in place of a kubelet: device plugins register with it
// on /var/lib/kubelet/device-plugins/kubelet.sock exactly as with a kubelet, it publishes the
// plugins' capacity in the node's status, and it admits the pods bound to the node by calling the
// manager's Allocate for every container (which calls GetPreferredAllocation and Allocate on the
// plugin). The container options the plugin returned are recorded on the pod as annotation
// tessera-e2e/device-env (container name -> environment), the pod is marked Running, or Failed
// with the kubelet's UnexpectedAdmissionError when Allocate fails. Pods being deleted are removed
// as a kubelet would once their containers stopped.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

type sourcesReady struct{}

func (sourcesReady) AddSource(string) {}
func (sourcesReady) AllReady() bool  { return true }

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the test cluster")
	nodeName := flag.String("node", "", "the node this device manager serves")
	resource := flag.String("resource", "nvidia.com/gpu", "extended resource to publish")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-dm:", err)
		os.Exit(2)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	logger := klog.Background()
	mgr, err := devicemanager.NewManagerImpl(nil, topologymanager.NewFakeManager())
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-dm:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	active := map[types.UID]*v1.Pod{}
	activePods := func() []*v1.Pod {
		mu.Lock()
		defer mu.Unlock()
		out := make([]*v1.Pod, 0, len(active))
		for _, p := range active {
			out = append(out, p)
		}
		return out
	}
	if err := mgr.Start(logger, activePods, sourcesReady{}, containermap.NewContainerMap(),
		sets.New[string]()); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-dm: start:", err)
		os.Exit(2)
	}
	fmt.Println("kubelet-dm: device manager serving", *nodeName)

	ctx := context.Background()
	admitted := map[types.UID]bool{}
	lastCapacity := ""
	for {
		time.Sleep(200 * time.Millisecond)
		capacity, allocatable, _ := mgr.GetCapacity()
		name := v1.ResourceName(*resource)
		c, a := capacity[name], allocatable[name]
		if now := c.String() + "/" + a.String(); now != lastCapacity {
			patch := fmt.Sprintf(`{"status":{"capacity":{%q:%q},"allocatable":{%q:%q}}}`,
				*resource, c.String(), *resource, a.String())
			if _, err := cs.CoreV1().Nodes().PatchStatus(ctx, *nodeName, []byte(patch)); err == nil {
				fmt.Println("kubelet-dm: node", *resource, "capacity", c.String(), "allocatable", a.String())
				lastCapacity = now
			}
		}
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{
			FieldSelector: "spec.nodeName=" + *nodeName})
		if err != nil {
			continue
		}
		mu.Lock()
		active = map[types.UID]*v1.Pod{}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed &&
				p.DeletionTimestamp == nil {
				active[p.UID] = p
			}
		}
		mu.Unlock()
		for i := range pods.Items {
			pod := pods.Items[i].DeepCopy()
			if pod.DeletionTimestamp != nil {
				zero := int64(0)
				_ = cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name,
					metav1.DeleteOptions{GracePeriodSeconds: &zero})
				continue
			}
			if admitted[pod.UID] || pod.Status.Phase != v1.PodPending {
				continue
			}
			admitted[pod.UID] = true
			admit(ctx, cs, mgr, pod)
		}
		mgr.UpdateAllocatedDevices()
	}
}

// admit allocates every container's devices as the kubelet's admission handler does.
func admit(ctx context.Context, cs *kubernetes.Clientset, mgr *devicemanager.ManagerImpl,
	pod *v1.Pod) {
	envs := map[string]map[string]string{}
	containers := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	var failure error
	for i := range containers {
		c := &containers[i]
		if err := mgr.Allocate(pod, c); err != nil {
			failure = err
			break
		}
		opts, err := mgr.GetDeviceRunContainerOptions(ctx, pod, c)
		if err != nil {
			failure = err
			break
		}
		if opts != nil && len(opts.Envs) > 0 {
			env := map[string]string{}
			for _, e := range opts.Envs {
				env[e.Name] = e.Value
			}
			envs[c.Name] = env
		}
	}
	if failure != nil {
		pod.Status.Phase = v1.PodFailed
		pod.Status.Reason = "UnexpectedAdmissionError"
		pod.Status.Message = fmt.Sprintf("Allocate failed due to %v, which is unexpected", failure)
		_, _ = cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		fmt.Println("kubelet-dm: rejected", pod.Namespace+"/"+pod.Name+":", failure)
		return
	}
	text, _ := json.Marshal(envs)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{"tessera-e2e/device-env": string(text)}}})
	fresh, err := cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch,
		metav1.PatchOptions{})
	if err != nil {
		fmt.Println("kubelet-dm: annotate", pod.Name+":", err)
		return
	}
	fresh.Status.Phase = v1.PodRunning
	_, _ = cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	fmt.Println("kubelet-dm: admitted", pod.Namespace+"/"+pod.Name)
}
