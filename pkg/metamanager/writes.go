package metamanager

import (
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/authority/pace"
)

// The transports of metawatch's writes are assembled here, for the
// Manager's client (pacedClient, on a config New has already wrapped) and
// for the writes outside a generation (WriteClient): each write checked
// against the claim it was admitted under as it is sent (authority.Wrap),
// and paced (package pace).

// WriteClient is a client for the writes metawatch makes outside a
// generation's Manager (the pruner's deletes, the brake's record, the
// reports), through the same transports as the Manager's writes: checked
// against the claim as they are sent and paced by p (nil: not paced).
func WriteClient(cfg *rest.Config, p *pace.Pacer, opts client.Options) (client.Client, error) {
	return client.New(p.Config(authority.Wrap(cfg)), opts)
}

// pacedClient builds the manager's client (its writes: applies, patches,
// admission policies) on a config whose writes the pacer paces, with a
// transport of its own. The cache and the API reader keep the manager's
// config and its rate limit.
func pacedClient(p *pace.Pacer) client.NewClientFunc {
	return func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		if p == nil {
			return client.New(cfg, opts)
		}
		paced := p.Config(cfg)
		var err error
		if opts.HTTPClient, err = rest.HTTPClientFor(paced); err != nil {
			return nil, fmt.Errorf("creating the writes' HTTP client: %w", err)
		}
		return client.New(paced, opts)
	}
}
