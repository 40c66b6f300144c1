package reload

import (
	"errors"
	"fmt"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// modeValid checks that the Reloader has what its run mode needs, and
// nothing another mode would use.
func (r *Reloader) modeValid() error {
	if (r.Settings.Mode == authority.Sharded) != (r.Sharding != nil && r.Sharding.Ring != nil) {
		return fmt.Errorf("reload: Reloader.Sharding and its Ring are set exactly in the sharded mode, and the mode is %s", r.Settings.Mode)
	}
	if _, err := r.Settings.Mode.Guard(authority.NewWriteFence(), r.Leader, r.ring()); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	return nil
}

// guard is the guard of writes under fence in the Reloader's run mode.
func (r *Reloader) guard(fence *authority.WriteFence) (authority.Guard, error) {
	return r.Settings.Mode.Guard(fence, r.Leader, r.ring())
}

// ring is the sharding ring the writes pass, sharded; nil otherwise.
func (r *Reloader) ring() authority.Ring {
	if r.Settings.Mode != authority.Sharded || r.Sharding == nil {
		return nil
	}
	return r.Sharding.Ring
}

// shardingMode is the sharding mode's name, as the metric and /readyz say it.
func (r *Reloader) shardingMode() string {
	switch {
	case r.Settings.Mode != authority.Sharded:
		return telemetry.ShardingOff
	case r.Sharding.ServerSide:
		return telemetry.ShardingServer
	}
	return telemetry.ShardingClient
}

// shardsReady fails while buckets assigned to this replica are unwritable.
func (r *Reloader) shardsReady() error {
	if r.Settings.Mode != authority.Sharded {
		return nil
	}
	if unwritable := r.Sharding.Ring.Unwritable(); len(unwritable) > 0 {
		return errors.New(r.Sharding.unwritableMessage(unwritable))
	}
	return nil
}

// describeSharding says how this replica is sharded, for /readyz/configuration.
func (r *Reloader) describeSharding() string {
	switch r.shardingMode() {
	case telemetry.ShardingOff:
		return "sharding off"
	case telemetry.ShardingServer:
		return fmt.Sprintf("sharding server-side (the API server filters by shard), %s", r.Sharding.share())
	}
	return fmt.Sprintf("sharding client-side (the API server does not filter by shard: ShardedListAndWatch is off, or the server is older than 1.36; objects of other shards are dropped on receipt), %s", r.Sharding.share())
}
