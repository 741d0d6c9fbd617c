package kubeconfigprovider

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// A cluster brakebench did not create is never changed unless the user named its context in
// cluster.allowContext.
func TestControllerChangesNeedAllowContext(t *testing.T) {
	for _, tc := range []struct {
		allow   string
		refused bool
	}{{"", true}, {"staging", true}, {"prod", false}} {
		p := &Provider{Context: "prod", AllowContext: tc.allow, Namespace: "agent-sandbox-system", Deployment: "agent-sandbox-controller", Name_: "kubeconfig"}
		c, err := NewCluster(p, &rest.Config{Host: "https://127.0.0.1:1"}, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctrl := c.Controller()
		_, cerr := ctrl.Configure(context.Background(), "", []string{"--x=1"})
		_, serr := ctrl.Stop(context.Background())
		rerr := ctrl.Restore(context.Background(), "", nil)
		for _, err := range []error{cerr, serr, rerr} {
			refused := err != nil && strings.Contains(err.Error(), "needs --set cluster.allowContext=prod")
			if refused != tc.refused {
				t.Errorf("allowContext %q: %v (refused=%v, want %v)", tc.allow, err, refused, tc.refused)
			}
		}
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("closing a cluster brakebench did not create must do nothing: %v", err)
		}
	}
}
